package catalog_test

import (
	"regexp"
	"testing"

	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

// Topics route to exactly one consumer group, and every published topic
// has one: otherwise a message would have no queue in AWS.
func TestTopicsHaveOneConsumer(t *testing.T) {
	consumers := map[string]string{}
	for _, g := range catalog.Groups() {
		for _, topic := range g.Consumes {
			if other, dup := consumers[topic]; dup {
				t.Errorf("topic %s consumed by %s and %s", topic, other, g.Name)
			}
			consumers[topic] = g.Name
		}
	}
	for _, g := range catalog.Groups() {
		for _, topic := range g.Publishes {
			if _, ok := consumers[topic]; !ok {
				t.Errorf("%s publishes %s, which no group consumes", g.Name, topic)
			}
		}
	}
}

var groupName = regexp.MustCompile(`^[a-z][a-z0-9-]{1,30}$`)

func TestGroupDeclarations(t *testing.T) {
	seen := map[string]bool{}
	routes := map[string]string{}
	for _, g := range catalog.Groups() {
		if !groupName.MatchString(g.Name) || seen[g.Name] {
			t.Errorf("group name %q is invalid or repeated", g.Name)
		}
		seen[g.Name] = true
		if g.Build == nil || g.Description == "" {
			t.Errorf("group %s lacks a builder or a description", g.Name)
		}
		for _, r := range g.Routes {
			if r.Group != g.Name {
				t.Errorf("%s is declared in %s but says group %s", r.Pattern(), g.Name, r.Group)
			}
			// Routes are unique per host (the tool server has its own).
			key := g.Host + " " + r.Pattern()
			if other, dup := routes[key]; dup {
				t.Errorf("%s is in %s and %s", r.Pattern(), other, g.Name)
			}
			routes[key] = g.Name
			if r.Summary == "" {
				t.Errorf("%s has no summary", r.Pattern())
			}
		}
		if _, ok := catalog.Lookup(g.Name); !ok {
			t.Errorf("Lookup(%s) fails", g.Name)
		}
	}
}

// Each route's declared rate-limit category is the one the interface's
// table gives its method and path.
func TestRouteLimitsMatchTheTable(t *testing.T) {
	if err := ratelimits.CheckLimits(catalog.Routes()...); err != nil {
		t.Fatal(err)
	}
}

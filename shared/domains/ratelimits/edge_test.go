package ratelimits_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

// wafRequest is what the WAF rules look at.
type wafRequest struct {
	method, path string
	headers      map[string]string // lower-case names
	labels       map[string]bool
}

var compiled = map[string]*regexp.Regexp{}

// eval evaluates a plan statement the way WAF does.
func eval(t *testing.T, s ratelimits.Statement, r *wafRequest) bool {
	switch {
	case len(s.And) > 0:
		for _, c := range s.And {
			if !eval(t, c, r) {
				return false
			}
		}
		return true
	case len(s.Or) > 0:
		for _, c := range s.Or {
			if eval(t, c, r) {
				return true
			}
		}
		return false
	case s.Not != nil:
		return !eval(t, *s.Not, r)
	case s.Method != "":
		return r.method == s.Method
	case s.PathRegex != "":
		re, ok := compiled[s.PathRegex]
		if !ok {
			re = regexp.MustCompile(s.PathRegex)
			compiled[s.PathRegex] = re
		}
		return re.MatchString(r.path)
	case s.HeaderPresent != "":
		return r.headers[s.HeaderPresent] != ""
	case s.Label != "":
		return r.labels[s.Label]
	}
	t.Fatalf("empty statement")
	return false
}

// run passes r through the plan's claim rules and returns the rate rules
// whose scope-down it matches.
func run(t *testing.T, p ratelimits.EdgePlan, r *wafRequest) []ratelimits.RateRule {
	r.labels = map[string]bool{}
	for _, c := range p.Claims {
		if eval(t, c.Statement, r) {
			for _, l := range c.Labels {
				r.labels[l] = true
			}
		}
	}
	var out []ratelimits.RateRule
	for _, rr := range p.Limits {
		if eval(t, rr.ScopeDown, r) {
			out = append(out, rr)
		}
	}
	return out
}

// samplePaths exercises every match of the table, its mount, and near misses.
func samplePaths() []string {
	paths := []string{"/", "/v2/deployments", "/nowhere", "/api/v1", "/api/v1/", "/runs/not-a-uuid", "/api/v1/api/v1/runs/" + uuid1}
	for _, r := range ratelimits.Rows() {
		for _, m := range r.Matches {
			p := m.Path
			switch m.Kind {
			case ratelimits.Exact, ratelimits.Prefix:
				paths = append(paths, p, ratelimits.Mount+p, p+"/x/y", p+"x", "/other"+p)
			case ratelimits.Template:
				u := strings.ReplaceAll(p, "{uuid}", uuid1)
				paths = append(paths, u, ratelimits.Mount+u, u+"/x", strings.ReplaceAll(p, "{uuid}", "abc"))
			case ratelimits.Contains:
				paths = append(paths, "/a"+p+"/b", p, "/a"+p+"x")
			case ratelimits.Suffix:
				paths = append(paths, "/a"+p, p, p+"/x")
			}
		}
	}
	return paths
}

// The WAF plan sends every request to the row the app limiter counts it
// against, and to that row only.
func TestEdgePlanAgreesWithSelection(t *testing.T) {
	headerSets := []map[string]string{
		{}, {"x-api-key": "k"}, {"x-user-id": "u"}, {"x-api-key": "k", "x-user-id": "u"}, {"authorization": "Bearer k"},
	}
	for _, stage := range []string{"", "/prod"} {
		plan := ratelimits.Edge(ratelimits.US, ratelimits.EdgeOptions{StagePath: stage})
		n := 0
		for _, path := range samplePaths() {
			for _, method := range []string{"GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS", "PUT"} {
				for _, h := range headerSets {
					p := ratelimits.Presence{Key: h["x-api-key"] != "" || h["authorization"] != "", User: h["x-user-id"] != ""}
					want := ratelimits.Select(method, path, p)
					got := run(t, plan, &wafRequest{method: method, path: stage + path, headers: h})
					if len(got) != 1 || got[0].Seq != want.Seq {
						var seqs []int
						for _, g := range got {
							seqs = append(seqs, g.Seq)
						}
						t.Fatalf("stage %q: %s %s %v: WAF rows %v, app row %d", stage, method, path, h, seqs, want.Seq)
					}
					n++
				}
			}
		}
		if n < 1000 {
			t.Fatalf("only %d requests checked", n)
		}
	}
}

// Every row is in both regions' plans with figures WAF accepts, never
// stricter than the interface.
func TestEdgeFigures(t *testing.T) {
	want := map[ratelimits.Region]map[int][2]int64{
		ratelimits.US: {1: {12000, 60}, 5: {100, 60}, 9: {750, 600}, 12: {90, 60}, 14: {30, 600}, 16: {10000, 60}, 18: {10, 60}, 28: {10, 60}, 29: {100, 60}},
		ratelimits.EU: {16: {2000, 60}, 17: {2000, 60}, 28: {120, 60}, 13: {1800, 60}},
	}
	for _, region := range ratelimits.Regions {
		plan := ratelimits.Edge(region, ratelimits.EdgeOptions{})
		rows := ratelimits.Rows()
		if len(plan.Limits) != len(rows) {
			t.Fatalf("%s: %d rate rules for %d rows", region, len(plan.Limits), len(rows))
		}
		for i, rr := range plan.Limits {
			row := rows[i]
			rate := row.Rate(region)
			iv := int64(rate.Interval / time.Second)
			if rr.Seq != row.Seq || rr.Interface != rate || rr.Category != row.Category || rr.Name != row.Name() {
				t.Errorf("%s row %d: %+v", region, row.Seq, rr)
			}
			if !slices.Contains(ratelimits.WAFWindows, rr.EvaluationWindowSec) || rr.Limit < ratelimits.WAFMinLimit {
				t.Errorf("%s row %d: %d per %d s is not a WAF figure", region, row.Seq, rr.Limit, rr.EvaluationWindowSec)
			}
			// Never stricter: the same or a higher average rate, and at
			// least a whole burst within the window.
			if rr.Limit*iv < rate.Count*rr.EvaluationWindowSec || rr.Limit < rate.Count {
				t.Errorf("%s row %d: %d per %d s is stricter than %v", region, row.Seq, rr.Limit, rr.EvaluationWindowSec, rate)
			}
			exact := slices.Contains(ratelimits.WAFWindows, iv) && rate.Count >= ratelimits.WAFMinLimit
			if exact != strings.HasPrefix(rr.Approximation, "same figures") || exact && (rr.Limit != rate.Count || rr.EvaluationWindowSec != iv) {
				t.Errorf("%s row %d: %d per %d s, %q", region, row.Seq, rr.Limit, rr.EvaluationWindowSec, rr.Approximation)
			}
			if w, ok := want[region][row.Seq]; ok && (rr.Limit != w[0] || rr.EvaluationWindowSec != w[1]) {
				t.Errorf("%s row %d: %d / %d, want %v", region, row.Seq, rr.Limit, rr.EvaluationWindowSec, w)
			}
			wantKeys := map[ratelimits.Identity]string{ratelimits.ByIP: "IP", ratelimits.ByAPIKey: "CUSTOM_KEYS", ratelimits.ByUserIP: "CUSTOM_KEYS"}
			if rr.AggregateKeyType != wantKeys[row.Identity] {
				t.Errorf("row %d: aggregation %s", row.Seq, rr.AggregateKeyType)
			}
			switch row.Identity {
			case ratelimits.ByAPIKey:
				if len(rr.CustomKeys) != 1 || rr.CustomKeys[0].Header != "x-api-key" {
					t.Errorf("row %d: keys %+v", row.Seq, rr.CustomKeys)
				}
			case ratelimits.ByUserIP:
				if len(rr.CustomKeys) != 2 || rr.CustomKeys[0].Header != "x-user-id" || !rr.CustomKeys[1].IP {
					t.Errorf("row %d: keys %+v", row.Seq, rr.CustomKeys)
				}
			}
		}
		if w := plan.WCU(); w > 1500 {
			t.Errorf("%s: %d WCU, over the 1500 a web ACL gets without extra charges", region, w)
		}
	}
}

func TestEdgeNamesAndPriorities(t *testing.T) {
	plan := ratelimits.Edge(ratelimits.EU, ratelimits.EdgeOptions{FirstPriority: 10})
	names := map[string]bool{}
	prio := 10
	ruleName := regexp.MustCompile(`^[0-9A-Za-z_-]{1,128}$`)
	label := regexp.MustCompile(`^[0-9A-Za-z_:-]+$`)
	reserved := []string{"aws", "waf", "managed", "rulegroup", "webacl", "regexpatternset", "ipset"}
	check := func(name string, p int, labels []string) {
		if names[name] || !ruleName.MatchString(name) {
			t.Errorf("rule name %q", name)
		}
		names[name] = true
		if p != prio {
			t.Errorf("%s: priority %d, want %d", name, p, prio)
		}
		prio++
		for _, l := range labels {
			for _, part := range strings.Split(l, ":") {
				if slices.Contains(reserved, part) {
					t.Errorf("label %q uses a reserved word", l)
				}
			}
			if !label.MatchString(l) || len(l) > 1024 {
				t.Errorf("label %q", l)
			}
		}
	}
	for _, c := range plan.Claims {
		check(c.Name, c.Priority, c.Labels)
	}
	for _, r := range plan.Limits {
		check(r.Name, r.Priority, []string{r.ScopeDown.Label})
	}
	var walk func(s ratelimits.Statement)
	walk = func(s ratelimits.Statement) {
		if s.PathRegex != "" {
			if len(s.PathRegex) > 200 {
				t.Errorf("regex too long: %s", s.PathRegex)
			}
			regexp.MustCompile(s.PathRegex)
		}
		for _, c := range append(s.And, s.Or...) {
			walk(c)
		}
		if s.Not != nil {
			walk(*s.Not)
		}
	}
	for _, c := range plan.Claims {
		walk(c.Statement)
	}
}

func TestThrottles(t *testing.T) {
	for _, region := range ratelimits.Regions {
		plan := ratelimits.Edge(region, ratelimits.EdgeOptions{})
		var seqs []int
		for _, th := range plan.Throttles {
			seqs = append(seqs, th.Seq)
			row, _ := ratelimits.RowBySeq(th.Seq)
			rate := row.Rate(region)
			if th.Burst != rate.Count || th.RatePerSecond != float64(rate.Count)/rate.Interval.Seconds() {
				t.Errorf("row %d: %+v", th.Seq, th)
			}
		}
		if !slices.Equal(seqs, []int{7, 8, 11, 12, 20, 22, 23}) {
			t.Errorf("%s: throttled rows %v", region, seqs)
		}
	}
	if th, ok := ratelimits.MethodThrottle(ratelimits.US, "GET", "/api/v1/runs/{run_id}"); !ok || th.Seq != 23 || th.RatePerSecond != 0.5 || th.Burst != 30 || th.Resources[0] != "/api/v1/runs/{run_id}" {
		t.Errorf("run lookup: %+v %v", th, ok)
	}
	if th, ok := ratelimits.MethodThrottle(ratelimits.US, "POST", "/runs/query"); !ok || th.RatePerSecond != 1.5 || th.Burst != 15 {
		t.Errorf("run query: %+v %v", th, ok)
	}
	for _, route := range [][2]string{{"POST", "/runs/stats"}, {"GET", "/repos/{owner}"}, {"GET", "/v2/deployments"}} {
		if th, ok := ratelimits.MethodThrottle(ratelimits.US, route[0], route[1]); ok {
			t.Errorf("%v throttled: %+v", route, th)
		}
	}
}

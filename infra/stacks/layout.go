package stacks

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// Function timeouts by the events a group's function receives; a function
// gets the largest of its kinds.
const (
	// APITimeoutSeconds is API Gateway's integration timeout.
	APITimeoutSeconds = 29
	// ConsumerTimeoutSeconds bounds one SQS batch.
	ConsumerTimeoutSeconds = 120
	// SweepTimeoutSeconds bounds one round of periodic maintenance.
	SweepTimeoutSeconds = 300
	// StepTimeoutSeconds bounds one workflow step run as a Lambda task.
	StepTimeoutSeconds = 900
	// VisibilityFactor: a queue's visibility timeout is this many times its
	// consumer's timeout, as Lambda advises for SQS event sources (a batch
	// retried by the poller must not reappear while still running).
	VisibilityFactor = 6
	// MaxReceives is how often a message is tried before it moves to its
	// queue's dead-letter queue.
	MaxReceives = 5
)

// Workflow is a workflow definition and the group whose function runs its
// steps (the state machine's Lambda tasks invoke it, and its CodeBuild
// steps run its deployment zip).
type Workflow struct {
	Definition workflow.Definition
	Group      string
}

// GroupPlan is one group with what the stack derives from its declaration.
type GroupPlan struct {
	compose.Group `json:"-"`
	// TimeoutSeconds is the function's timeout.
	TimeoutSeconds int
	// VisibilitySeconds is its queue's visibility timeout (0: no queue).
	VisibilitySeconds int
	// TopicQueues maps each topic the group publishes to the group whose
	// queue receives it (AGENTPLANE_TOPICS points at that queue).
	TopicQueues map[string]string
	// Runs lists the workflows whose steps the function runs.
	Runs []string
	// Store says the function opens the region's store (the table): every
	// group on the platform API does. A group with a host of its own (the
	// tool server) is a client of the platform API: it opens no store and
	// gets no data grant at all.
	Store bool
	// Egress, when set, says why the group's code calls user endpoints
	// (SetEgress): its function (and its CodeBuild steps) run in the VPC's
	// private subnets, behind the NAT gateways whose addresses the region
	// publishes.
	Egress string
}

// HasQueue says the group consumes topics, so it has a queue.
func (g GroupPlan) HasQueue() bool { return len(g.Consumes) > 0 }

// PublishesTo returns the groups whose queues the group sends to, sorted.
func (g GroupPlan) PublishesTo() []string {
	var out []string
	for _, c := range g.TopicQueues {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// Layout is a checked catalog: every group with its derived settings, the
// workflows, and the REST API's resource tree. The region stack is built
// from it, and LocalStack's hooks read its JSON form (WriteJSON).
type Layout struct {
	Groups    []GroupPlan
	Workflows []Workflow
	// Consumers maps each topic to the group that consumes it.
	Consumers map[string]string
	// apis are the REST APIs' resource trees by host: "" is the platform
	// API, any other the API of the groups with that Host.
	apis map[string]*apiNode
}

var groupNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// NewLayout checks groups and workflows against each other and against
// what AWS accepts, and derives the per-group settings. It rejects a
// catalog the stack could not deploy correctly: duplicate or unusable group
// names, a topic with no consumer or two, an index the table lacks, a
// started workflow without a state machine, a workflow without a runner,
// and routes API Gateway cannot express.
func NewLayout(groups []compose.Group, workflows []Workflow) (*Layout, error) {
	l := &Layout{Workflows: workflows, Consumers: map[string]string{}}
	byName := map[string]int{}
	for i, g := range groups {
		if !groupNamePattern.MatchString(g.Name) {
			return nil, fmt.Errorf("group name %q: want lower-case letters, digits and dashes, starting with a letter", g.Name)
		}
		if _, dup := byName[g.Name]; dup {
			return nil, fmt.Errorf("group %s is declared twice", g.Name)
		}
		byName[g.Name] = i
		for _, t := range g.Consumes {
			if other, dup := l.Consumers[t]; dup {
				return nil, fmt.Errorf("topic %s is consumed by %s and %s; a topic has one queue", t, other, g.Name)
			}
			l.Consumers[t] = g.Name
		}
		for _, ix := range g.Uses.Indexes {
			if !slices.Contains(store.IndexNames, ix) {
				return nil, fmt.Errorf("group %s uses index %q, which the table does not have (%v)", g.Name, ix, store.IndexNames)
			}
		}
	}
	wfRunner := map[string]string{}
	for _, w := range workflows {
		if err := CheckSteps(w.Definition); err != nil {
			return nil, err
		}
		if _, dup := wfRunner[w.Definition.Name]; dup {
			return nil, fmt.Errorf("workflow %s is defined twice", w.Definition.Name)
		}
		i, ok := byName[w.Group]
		if !ok {
			return nil, fmt.Errorf("workflow %s runs in group %q, which is not in the catalog", w.Definition.Name, w.Group)
		}
		if !groups[i].Uses.RunsSteps {
			return nil, fmt.Errorf("workflow %s runs in group %s, which does not declare Uses.RunsSteps", w.Definition.Name, w.Group)
		}
		wfRunner[w.Definition.Name] = w.Group
	}

	specs := map[string][]api.Spec{}
	for _, g := range groups {
		p := GroupPlan{Group: g, TopicQueues: map[string]string{}, Store: g.Host == ""}
		if g.Host != "" {
			if err := checkOwnHost(g); err != nil {
				return nil, err
			}
		}
		for _, t := range g.Publishes {
			c, ok := l.Consumers[t]
			if !ok {
				return nil, fmt.Errorf("group %s publishes %s, which no group consumes", g.Name, t)
			}
			p.TopicQueues[t] = c
		}
		for _, wf := range g.Uses.StartsWorkflows {
			if _, ok := wfRunner[wf]; !ok {
				return nil, fmt.Errorf("group %s starts workflow %q, which has no definition", g.Name, wf)
			}
		}
		for _, w := range workflows {
			if w.Group == g.Name {
				p.Runs = append(p.Runs, w.Definition.Name)
			}
		}
		if g.Uses.RunsSteps && len(p.Runs) == 0 {
			return nil, fmt.Errorf("group %s runs workflow steps, but no workflow definition names it", g.Name)
		}
		for _, r := range g.Routes {
			if r.Group != "" && r.Group != g.Name {
				return nil, fmt.Errorf("route %s is declared in group %s but says group %s", r.Pattern(), g.Name, r.Group)
			}
			r.Group = g.Name
			specs[g.Host] = append(specs[g.Host], r)
		}
		timeout := 0
		for _, k := range []struct {
			on      bool
			seconds int
		}{
			{len(g.Routes) > 0, APITimeoutSeconds},
			{len(g.Consumes) > 0, ConsumerTimeoutSeconds},
			{g.Sweeps, SweepTimeoutSeconds},
			{len(p.Runs) > 0, StepTimeoutSeconds},
		} {
			if k.on {
				timeout = max(timeout, k.seconds)
			}
		}
		if timeout == 0 {
			return nil, fmt.Errorf("group %s has no routes, topics, sweep or workflow steps: its function would never run", g.Name)
		}
		p.TimeoutSeconds = timeout
		if p.HasQueue() {
			p.VisibilitySeconds = VisibilityFactor * timeout
		}
		l.Groups = append(l.Groups, p)
	}
	if len(specs[""]) == 0 {
		return nil, fmt.Errorf("no group has routes on the platform API: a REST API needs at least one method")
	}
	l.apis = map[string]*apiNode{}
	for host, ss := range specs {
		root, err := planAPI(ss)
		if err != nil {
			return nil, err
		}
		l.apis[host] = collapse(root)
	}
	return l, nil
}

// checkOwnHost rejects a group with its own host that declares more than
// routes: such a group is a client of the platform API (it opens no store),
// so it can neither use the region's data nor take part in its queues,
// sweeps or workflows.
func checkOwnHost(g compose.Group) error {
	switch {
	case !groupNamePattern.MatchString(g.Host):
		return fmt.Errorf("group %s: host %q: want lower-case letters, digits and dashes, starting with a letter", g.Name, g.Host)
	case len(g.Routes) == 0:
		return fmt.Errorf("group %s has host %q but no routes", g.Name, g.Host)
	case len(g.Consumes) > 0 || len(g.Publishes) > 0 || g.Sweeps:
		return fmt.Errorf("group %s has its own host (%s): it opens no store, so it cannot consume, publish or sweep", g.Name, g.Host)
	case len(g.Uses.Indexes) > 0 || g.Uses.Blobs || g.Uses.Secrets || len(g.Uses.StartsWorkflows) > 0 || g.Uses.RunsSteps:
		return fmt.Errorf("group %s has its own host (%s): it opens no store, so it cannot use indexes, blobs, secrets or workflows", g.Name, g.Host)
	}
	return nil
}

// SetEgress marks the groups whose code calls user endpoints, each with
// the reason; an unknown group is an error.
func (l *Layout) SetEgress(reasons map[string]string) error {
	for name, why := range reasons {
		found := false
		for i := range l.Groups {
			if l.Groups[i].Name == name {
				l.Groups[i].Egress = why
				found = true
			}
		}
		if !found {
			return fmt.Errorf("egress group %s is not in the catalog", name)
		}
		if why == "" {
			return fmt.Errorf("egress group %s: say which user endpoints it calls", name)
		}
	}
	return nil
}

// Hosts lists the hosts with their own REST API ("" is the platform API),
// sorted.
func (l *Layout) Hosts() []string {
	out := make([]string, 0, len(l.apis))
	for h := range l.apis {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// Group returns the plan of the named group.
func (l *Layout) Group(name string) (GroupPlan, bool) {
	for _, g := range l.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return GroupPlan{}, false
}

// Routes returns every route of the groups on host ("" for the platform
// API), in catalog order.
func (l *Layout) Routes(host string) []api.Spec {
	var out []api.Spec
	for _, g := range l.Groups {
		if g.Host != host {
			continue
		}
		for _, r := range g.Routes {
			r.Group = g.Name
			out = append(out, r)
		}
	}
	return out
}

// LayoutFile is the JSON form of a layout, written next to the templates
// (cdk.out/agentplane.layout.json) for tools that cannot read Go: the
// LocalStack hooks create the queues, functions, event source mappings and
// schedules from it.
type LayoutFile struct {
	MaxReceives int                `json:"maxReceives"`
	Groups      []LayoutFileGroup  `json:"groups"`
	Workflows   []LayoutFileRunner `json:"workflows"`
}

// LayoutFileGroup is one group of a LayoutFile.
type LayoutFileGroup struct {
	Name              string            `json:"name"`
	Host              string            `json:"host"`
	Store             bool              `json:"store"`
	Egress            bool              `json:"egress"`
	TimeoutSeconds    int               `json:"timeoutSeconds"`
	Routes            int               `json:"routes"`
	Consumes          []string          `json:"consumes"`
	VisibilitySeconds int               `json:"visibilitySeconds,omitempty"`
	Topics            map[string]string `json:"topics"`
	Sweeps            bool              `json:"sweeps"`
	Blobs             bool              `json:"blobs"`
	Secrets           bool              `json:"secrets"`
	StartsWorkflows   []string          `json:"startsWorkflows"`
	Runs              []string          `json:"runs"`
}

// LayoutFileRunner names the group whose function runs a workflow's steps.
type LayoutFileRunner struct {
	Name  string `json:"name"`
	Group string `json:"group"`
}

// File returns the layout's JSON form.
func (l *Layout) File() LayoutFile {
	f := LayoutFile{MaxReceives: MaxReceives, Groups: []LayoutFileGroup{}, Workflows: []LayoutFileRunner{}}
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	for _, g := range l.Groups {
		f.Groups = append(f.Groups, LayoutFileGroup{
			Name: g.Name, Host: g.Host, Store: g.Store, Egress: g.Egress != "", TimeoutSeconds: g.TimeoutSeconds, Routes: len(g.Routes),
			Consumes: nonNil(g.Consumes), VisibilitySeconds: g.VisibilitySeconds, Topics: g.TopicQueues,
			Sweeps: g.Sweeps, Blobs: g.Uses.Blobs, Secrets: g.Uses.Secrets,
			StartsWorkflows: nonNil(g.Uses.StartsWorkflows), Runs: nonNil(g.Runs),
		})
	}
	for _, w := range l.Workflows {
		f.Workflows = append(f.Workflows, LayoutFileRunner{Name: w.Definition.Name, Group: w.Group})
	}
	return f
}

// WriteJSON writes File() to path.
func (l *Layout) WriteJSON(path string) error {
	raw, err := json.MarshalIndent(l.File(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

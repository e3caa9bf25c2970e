package ratelimits

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The edge plan: for each region, the WAF web ACL rules and the API
// Gateway method throttles the CDK app builds from the table. WAF cannot
// pick "the most specific row" by itself (every rate-based rule counts
// every request its scope-down matches), so the plan has two parts:
//
//  1. Claim rules (action Count), in the limiter's selection order. Each
//     matches its row's method, path and identity header and only requests
//     no earlier claim took (NOT label LabelClaimed); it adds LabelClaimed
//     and the row's label. A request thus carries exactly one row label,
//     the row the in-app limiter picks.
//  2. One rate-based rule per row (action Block with a 429), scoped down to
//     its row's label, aggregated by the row's identity, with the row's
//     figures rounded to what WAF can express.
//
// The edge is a coarse outer guard: WAF estimates rates and acts late
// (usually within 30 s), so every approximation below errs towards
// admitting; the exact limit is the in-app limiter's.

// Label names (unqualified: WAF resolves them within the web ACL).
const (
	LabelNamespace = "agentplane:ratelimit"
	LabelClaimed   = LabelNamespace + ":claimed"
)

// RowLabel is the label of row seq: "agentplane:ratelimit:r12".
func RowLabel(seq int) string { return fmt.Sprintf("%s:r%02d", LabelNamespace, seq) }

// WAF's limits on rate-based rules.
var (
	// WAFWindows are the evaluation windows WAF allows, in seconds.
	WAFWindows = []int64{60, 120, 300, 600}
)

// WAFMinLimit is the smallest limit a rate-based rule accepts.
const WAFMinLimit = 10

// Statement is a WAF rule statement as data. Exactly one field is set.
// Leaves carry no text transformation (NONE).
type Statement struct {
	And []Statement
	Or  []Statement
	Not *Statement
	// Method: a ByteMatchStatement on the HTTP method, EXACTLY.
	Method string
	// PathRegex: a RegexMatchStatement on the URI path.
	PathRegex string
	// HeaderPresent: a SizeConstraintStatement on that single header,
	// size GT 0 (a missing header does not match).
	HeaderPresent string
	// Label: a LabelMatchStatement, scope LABEL.
	Label string
}

// WCU is the statement's web ACL capacity units (AWS's published costs:
// string match EXACTLY 2, regex 3, size constraint 1, label match 1;
// logical statements cost their nested statements).
func (s Statement) WCU() int {
	n := 0
	for _, c := range append(append([]Statement(nil), s.And...), s.Or...) {
		n += c.WCU()
	}
	if s.Not != nil {
		n += s.Not.WCU()
	}
	switch {
	case s.Method != "":
		n += 2
	case s.PathRegex != "":
		n += 3
	case s.HeaderPresent != "":
		n++
	case s.Label != "":
		n++
	}
	return n
}

// ClaimRule is a Count rule that labels the requests of one row's
// alternative.
type ClaimRule struct {
	Priority  int
	Name      string
	Seq       int
	Labels    []string
	Statement Statement
}

// AggregateKey is one custom aggregation key: a header (text
// transformation NONE) or the IP.
type AggregateKey struct {
	Header string
	IP     bool
}

// RateRule is the rate-based rule of one row.
type RateRule struct {
	Priority int
	Name     string
	Seq      int
	Category string
	Identity Identity
	// AggregateKeyType is "IP" or "CUSTOM_KEYS" (then CustomKeys).
	AggregateKeyType string
	CustomKeys       []AggregateKey
	ScopeDown        Statement
	// Limit requests per EvaluationWindowSec, after rounding.
	Limit               int64
	EvaluationWindowSec int64
	// Interface is the row's own figures in the region.
	Interface Rate
	// Approximation says how Limit and the window differ from Interface.
	Approximation string
}

// Aggregation names what the rule counts by, for tables: "IP", or its
// custom keys joined ("header `x-user-id` + IP").
func (r RateRule) Aggregation() string {
	if r.AggregateKeyType == "IP" {
		return "IP"
	}
	keys := make([]string, 0, len(r.CustomKeys))
	for _, k := range r.CustomKeys {
		if k.IP {
			keys = append(keys, "IP")
		} else {
			keys = append(keys, "header `"+k.Header+"`")
		}
	}
	return strings.Join(keys, " + ")
}

// WCU of the rule: 2, 30 per custom key, and the scope-down.
func (r RateRule) WCU() int { return 2 + 30*len(r.CustomKeys) + r.ScopeDown.WCU() }

// Throttle is an API Gateway per-method throttle (token bucket) for a row
// that names one method on one resource.
type Throttle struct {
	Seq      int
	Category string
	Method   string
	// Resources are the row's paths, under "/" and Mount.
	Resources []string
	// RatePerSecond and Burst: count/interval refilled per second, count
	// at once.
	RatePerSecond float64
	Burst         int64
}

// EdgePlan is everything the CDK app builds for one region.
type EdgePlan struct {
	Region    Region
	Claims    []ClaimRule
	Limits    []RateRule
	Throttles []Throttle
}

// WCU is the web ACL capacity the plan needs.
func (p EdgePlan) WCU() int {
	n := 0
	for _, c := range p.Claims {
		n += c.Statement.WCU()
	}
	for _, r := range p.Limits {
		n += r.WCU()
	}
	return n
}

// EdgeOptions adapt the plan to the deployment.
type EdgeOptions struct {
	// StagePath, such as "/prod", is accepted in front of every path
	// (WAF sees it when clients call the execute-api endpoint).
	StagePath string
	// FirstPriority is the priority of the first rule.
	FirstPriority int
}

// Edge returns the plan of region r.
func Edge(r Region, o EdgeOptions) EdgePlan {
	p := EdgePlan{Region: r}
	prio := o.FirstPriority
	claim := func(seq int, name string, st Statement) {
		p.Claims = append(p.Claims, ClaimRule{Priority: prio, Name: name, Seq: seq,
			Labels: []string{LabelClaimed, RowLabel(seq)}, Statement: st})
		prio++
	}
	notClaimed := Statement{Not: &Statement{Label: LabelClaimed}}
	for _, c := range order {
		row := rows[c.row]
		parts := []Statement{matchStatement(c.match, o.StagePath)}
		if id, ok := identityStatement(row.Identity); ok {
			parts = append(parts, id)
		}
		parts = append(parts, notClaimed)
		claim(row.Seq, fmt.Sprintf("rl-claim-r%02d-%d", row.Seq, c.alt+1), Statement{And: parts})
	}
	for _, i := range []int{defaultKey, defaultUser} {
		id, _ := identityStatement(rows[i].Identity)
		claim(rows[i].Seq, fmt.Sprintf("rl-claim-r%02d", rows[i].Seq), Statement{And: []Statement{id, notClaimed}})
	}
	claim(rows[catchA].Seq, fmt.Sprintf("rl-claim-r%02d", rows[catchA].Seq), notClaimed)

	for _, row := range rows {
		limit, win, why := wafFigures(row.Rate(r))
		rr := RateRule{Priority: prio, Name: row.Name(), Seq: row.Seq, Category: row.Category, Identity: row.Identity,
			ScopeDown: Statement{Label: RowLabel(row.Seq)}, Limit: limit, EvaluationWindowSec: win,
			Interface: row.Rate(r), Approximation: why}
		prio++
		switch row.Identity {
		case ByIP:
			rr.AggregateKeyType = "IP"
		case ByAPIKey:
			rr.AggregateKeyType = "CUSTOM_KEYS"
			rr.CustomKeys = []AggregateKey{{Header: "x-api-key"}}
		case ByUserIP:
			rr.AggregateKeyType = "CUSTOM_KEYS"
			rr.CustomKeys = []AggregateKey{{Header: "x-user-id"}, {IP: true}}
		}
		p.Limits = append(p.Limits, rr)
		if t, ok := throttleOf(row, r); ok {
			p.Throttles = append(p.Throttles, t)
		}
	}
	return p
}

// identityStatement: an API-key row claims requests with either credential
// header (its rate rule counts only those with x-api-key, so a Bearer
// caller is never limited by IP at the edge, where the app counts it by
// key); a user row claims those with x-user-id; IP rows claim any.
func identityStatement(id Identity) (Statement, bool) {
	switch id {
	case ByAPIKey:
		return Statement{Or: []Statement{{HeaderPresent: "x-api-key"}, {HeaderPresent: "authorization"}}}, true
	case ByUserIP:
		return Statement{HeaderPresent: "x-user-id"}, true
	}
	return Statement{}, false
}

func matchStatement(m Match, stage string) Statement {
	var parts []Statement
	switch m.Method {
	case "":
	case "GET":
		// The app counts HEAD as GET (net/http serves it with GET).
		parts = append(parts, Statement{Or: []Statement{{Method: "GET"}, {Method: "HEAD"}}})
	default:
		parts = append(parts, Statement{Method: m.Method})
	}
	if re := PathRegex(m, stage); re != "" {
		parts = append(parts, Statement{PathRegex: re})
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return Statement{And: parts}
}

const uuidRegex = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

// PathRegex is the regular expression WAF tests a URI path with for m
// ("" for any path); it accepts what matchPath accepts. stage, when set,
// is optional in front.
func PathRegex(m Match, stage string) string {
	lead := "^"
	if stage != "" {
		lead += "(" + regexp.QuoteMeta(stage) + ")?"
	}
	lead += "(" + regexp.QuoteMeta(Mount) + ")?"
	switch m.Kind {
	case Exact:
		return lead + regexp.QuoteMeta(m.Path) + "$"
	case Prefix:
		return lead + regexp.QuoteMeta(m.Path) + "(/|$)"
	case Template:
		segs := strings.Split(m.Path, "/")
		for i, s := range segs {
			if isParam(s) {
				segs[i] = uuidRegex
			} else {
				segs[i] = regexp.QuoteMeta(s)
			}
		}
		return lead + strings.Join(segs, "/") + "$"
	case Contains:
		return regexp.QuoteMeta(m.Path)
	case Suffix:
		return regexp.QuoteMeta(m.Path) + "$"
	}
	return ""
}

// wafFigures rounds a rate to a WAF limit and window, never stricter than
// the interface for the traffic the interface admits:
//   - an interval WAF allows is kept as it is;
//   - a shorter one becomes the shortest window at least as long, the
//     count scaled in proportion (the same average rate);
//   - a longer one becomes the longest window with the count kept (a
//     burst the interface admits is never blocked; the average may be
//     higher);
//   - a limit under WAF's minimum is raised to it.
func wafFigures(r Rate) (limit, window int64, why string) {
	iv := int64(r.Interval / time.Second)
	longest := WAFWindows[len(WAFWindows)-1]
	var notes []string
	switch {
	case slices.Contains(WAFWindows, iv):
		window, limit = iv, r.Count
	case iv > longest:
		window, limit = longest, r.Count
		notes = append(notes, fmt.Sprintf("%d s exceeds WAF's longest window: %d per %d s keeps a whole burst admitted but allows up to %d per %d s; the app enforces %d per %d s",
			iv, limit, window, limit*ceilDiv(iv, window), iv, r.Count, iv))
	default:
		window = longest
		for _, w := range WAFWindows {
			if w >= iv {
				window = w
				break
			}
		}
		limit = ceilDiv(r.Count*window, iv)
		notes = append(notes, fmt.Sprintf("%d s is shorter than WAF's windows: %d per %d s is the same average rate, but admits bursts of up to %d in %d s; the app enforces %d per %d s",
			iv, limit, window, limit, iv, r.Count, iv))
	}
	if limit < WAFMinLimit {
		notes = append(notes, fmt.Sprintf("raised from %d to WAF's minimum of %d per %d s", limit, WAFMinLimit, window))
		limit = WAFMinLimit
	}
	if len(notes) == 0 {
		return limit, window, "same figures (WAF estimates the rate and acts within about 30 s)"
	}
	return limit, window, strings.Join(notes, "; ")
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// throttleOf maps an API-key row whose every alternative names one method
// and one resource (exact or template) onto a token bucket: burst = count,
// rate = count/interval per second. API Gateway applies method throttles
// per API key only inside a usage plan (ThrottlingPerMethod); a stage's
// method throttle is shared by all clients, so these figures belong in a
// usage plan, never on the stage. User+IP rows have no API Gateway
// identity to throttle by.
func throttleOf(row Row, r Region) (Throttle, bool) {
	if row.Kind != Specific || row.Identity != ByAPIKey {
		return Throttle{}, false
	}
	t := Throttle{Seq: row.Seq, Category: row.Category}
	for _, m := range row.Matches {
		if m.Method == "" || m.Kind != Exact && m.Kind != Template || t.Method != "" && t.Method != m.Method {
			return Throttle{}, false
		}
		t.Method = m.Method
		for _, p := range []string{m.Path, Mount + m.Path} {
			if !slices.Contains(t.Resources, p) && !strings.HasPrefix(p, Mount+Mount+"/") {
				t.Resources = append(t.Resources, p)
			}
		}
	}
	rate := row.Rate(r)
	t.RatePerSecond = float64(rate.Count) / rate.Interval.Seconds()
	t.Burst = rate.Count
	return t, true
}

// MethodThrottle is the throttle for a route (method and ServeMux path
// pattern) when the row an API-key caller gets there maps onto one.
func MethodThrottle(r Region, method, pattern string) (Throttle, bool) {
	i := selectRow(method, pattern, Presence{Key: true}, true)
	t, ok := throttleOf(rows[i], r)
	if ok {
		t.Resources = []string{pattern}
	}
	return t, ok
}

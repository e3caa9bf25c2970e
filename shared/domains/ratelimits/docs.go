package ratelimits

import (
	"fmt"
	"strings"
)

// Describe says in words what m matches.
func (m Match) Describe() string {
	method := "any method"
	if m.Method != "" {
		method = "`" + m.Method + "`"
	}
	switch m.Kind {
	case Exact:
		return fmt.Sprintf("%s `%s` exactly", method, m.Path)
	case Template:
		return fmt.Sprintf("%s `%s` ({uuid}: one UUID segment)", method, m.Path)
	case Prefix:
		return fmt.Sprintf("%s `%s` and below", method, m.Path)
	case Contains:
		return fmt.Sprintf("%s, path containing `%s`", method, m.Path)
	case Suffix:
		return fmt.Sprintf("%s, path ending in `%s`", method, m.Path)
	}
	return method + ", any path"
}

func describeRow(r Row) string {
	switch r.Kind {
	case Default:
		return "any request carrying the identity that no specific row took"
	case CatchAll:
		return "any request no other row took"
	}
	var parts []string
	for _, m := range r.Matches {
		parts = append(parts, m.Describe())
	}
	return strings.Join(parts, "; or ")
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Markdown is the generated part of docs/rate-limits.md: the table as the
// limiter reads it, the selection order, and each region's edge plan.
func Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("### The table as enforced\n\n")
	w("Rows keep the seed's numbering. Exact, template and prefix paths also match under `%s`.\n\n", Mount)
	w("| # | Seed's match | Read as | Identity | US | EU | Category |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		w("| %d | %s | %s | %s | %s | %s | %s |\n", r.Seq, cell(r.SeedMatch), cell(describeRow(r)), r.Identity, r.US, r.EU, r.Category)
	}

	w("\n### Selection order\n\nThe first entry that applies to a request is its row (an entry applies when the request carries the row's identity header, IP rows apply to every request, and method and path match):\n\n")
	n := 1
	for _, c := range order {
		r := rows[c.row]
		w("%d. row %d (%s, %s): %s\n", n, r.Seq, r.Category, r.Identity, c.match.Describe())
		n++
	}
	w("%d. row %d (%s): a request with an API key\n", n, rows[defaultKey].Seq, rows[defaultKey].Category)
	w("%d. row %d (%s): a request with `x-user-id`\n", n+1, rows[defaultUser].Seq, rows[defaultUser].Category)
	w("%d. row %d (%s): everything else\n", n+2, rows[catchA].Seq, rows[catchA].Category)

	us, eu := Edge(US, EdgeOptions{}), Edge(EU, EdgeOptions{})
	w("\n### WAF rate-based rules\n\n")
	w("One rule per row, scoped down to the row's label (`%s:rNN`), which the claim rules give each request in the selection order above. Paths are matched by these regular expressions on the URI path.\n\n", LabelNamespace)
	w("| # | Rule | Aggregation | Claims requests with | US limit / window | EU limit / window | Approximation |\n|---|---|---|---|---|---|---|\n")
	for i, r := range us.Limits {
		e := eu.Limits[i]
		why := r.Approximation
		if e.Approximation != r.Approximation {
			why = "US: " + r.Approximation + ". EU: " + e.Approximation
		}
		w("| %d | `%s` | %s | %s | %d / %d s | %d / %d s | %s |\n", r.Seq, r.Name, aggregation(r), cell(claimText(us, r.Seq)),
			r.Limit, r.EvaluationWindowSec, e.Limit, e.EvaluationWindowSec, cell(why))
	}
	w("\nWeb ACL capacity: US %d WCU, EU %d WCU (%d claim rules, %d rate-based rules).\n", us.WCU(), eu.WCU(), len(us.Claims), len(us.Limits))

	w("\n### API Gateway method throttles\n\n")
	w("Rows that name one method on one resource map onto a token bucket (rate = count / interval per second, burst = count), per API key in a usage plan's per-method throttle, never as a stage throttle (that one is shared by all clients).\n\n")
	w("| # | Category | Method | Resources | US rate / burst | EU rate / burst |\n|---|---|---|---|---|---|\n")
	for i, t := range us.Throttles {
		e := eu.Throttles[i]
		w("| %d | %s | %s | `%s` | %s / %d | %s / %d |\n", t.Seq, t.Category, t.Method, strings.Join(t.Resources, "`, `"),
			num(t.RatePerSecond), t.Burst, num(e.RatePerSecond), e.Burst)
	}
	return b.String()
}

func num(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

func aggregation(r RateRule) string {
	if r.AggregateKeyType == "IP" {
		return "IP"
	}
	return "custom keys: " + r.Aggregation()
}

// claimText describes the claim rules of row seq.
func claimText(p EdgePlan, seq int) string {
	var alts []string
	for _, c := range p.Claims {
		if c.Seq == seq {
			alts = append(alts, describeStatement(c.Statement))
		}
	}
	return strings.Join(alts, "; or ")
}

func describeStatement(s Statement) string {
	switch {
	case len(s.And) > 0:
		var parts []string
		for _, c := range s.And {
			if c.Not != nil && c.Not.Label == LabelClaimed {
				continue // every claim has it
			}
			parts = append(parts, describeStatement(c))
		}
		if len(parts) == 0 {
			return "anything unclaimed"
		}
		return strings.Join(parts, ", ")
	case len(s.Or) > 0:
		var parts []string
		for _, c := range s.Or {
			parts = append(parts, describeStatement(c))
		}
		return strings.Join(parts, " or ")
	case s.Not != nil:
		if s.Not.Label == LabelClaimed {
			return "anything unclaimed"
		}
		return "not " + describeStatement(*s.Not)
	case s.Method != "":
		return s.Method
	case s.PathRegex != "":
		return "`" + s.PathRegex + "`"
	case s.HeaderPresent != "":
		return "`" + s.HeaderPresent + "`"
	case s.Label != "":
		return "label `" + s.Label + "`"
	}
	return ""
}

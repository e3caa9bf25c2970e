package stacks

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

// The platform API's web ACL is ratelimits.Edge's plan for the region,
// rule for rule: the claim rules (Count, labelling each request with the
// one row the in-app limiter picks for it), then one rate-based rule per
// row of the interface's table (Block with a 429 and a JSON body), scoped
// down to that row's label and aggregated by the row's identity. Nothing
// else is in it: see infra/README.md ("WAF") for why no AWS managed rule
// group is added.

// EdgeOptions are the options the stacks build the plan with: the stage
// path is accepted in front of every path (requests through the
// execute-api host carry it; those through the API's domain do not).
func EdgeOptions() ratelimits.EdgeOptions {
	return ratelimits.EdgeOptions{StagePath: "/" + StageName}
}

// EdgePlan is the plan the stack of region name ("us" or "eu") deploys.
func EdgePlan(name string) ratelimits.EdgePlan {
	return ratelimits.Edge(ratelimits.Region(name), EdgeOptions())
}

// WAFBodyKey is the custom response body of a row's 429.
func WAFBodyKey(seq int) string { return fmt.Sprintf("r%02d", seq) }

// WAFBody is the 429's body for a rate rule: the interface's error shape,
// with the interface's figures (the ones clients are told to respect).
func WAFBody(r ratelimits.RateRule) string {
	return fmt.Sprintf(`{"detail": "Rate limit exceeded: %s allows %d requests per %d seconds."}`,
		r.Category, r.Interface.Count, int64(r.Interface.Interval/time.Second))
}

var noTransform = &[]any{&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")}}

func visibility(metric string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
	return &awswafv2.CfnWebACL_VisibilityConfigProperty{
		CloudWatchMetricsEnabled: jsii.Bool(true),
		MetricName:               jsii.String(metric),
		SampledRequestsEnabled:   jsii.Bool(true),
	}
}

// wafStatement turns a plan statement into its CloudFormation form.
func wafStatement(st ratelimits.Statement) *awswafv2.CfnWebACL_StatementProperty {
	list := func(sts []ratelimits.Statement) *[]any {
		out := []any{}
		for _, c := range sts {
			out = append(out, wafStatement(c))
		}
		return &out
	}
	switch {
	case len(st.And) == 1:
		return wafStatement(st.And[0])
	case len(st.Or) == 1:
		return wafStatement(st.Or[0])
	case len(st.And) > 1:
		return &awswafv2.CfnWebACL_StatementProperty{AndStatement: &awswafv2.CfnWebACL_AndStatementProperty{Statements: list(st.And)}}
	case len(st.Or) > 1:
		return &awswafv2.CfnWebACL_StatementProperty{OrStatement: &awswafv2.CfnWebACL_OrStatementProperty{Statements: list(st.Or)}}
	case st.Not != nil:
		return &awswafv2.CfnWebACL_StatementProperty{NotStatement: &awswafv2.CfnWebACL_NotStatementProperty{Statement: wafStatement(*st.Not)}}
	case st.Method != "":
		return &awswafv2.CfnWebACL_StatementProperty{ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
			FieldToMatch:         &awswafv2.CfnWebACL_FieldToMatchProperty{Method: map[string]any{}},
			PositionalConstraint: jsii.String("EXACTLY"),
			SearchString:         jsii.String(st.Method),
			TextTransformations:  noTransform,
		}}
	case st.PathRegex != "":
		return &awswafv2.CfnWebACL_StatementProperty{RegexMatchStatement: &awswafv2.CfnWebACL_RegexMatchStatementProperty{
			FieldToMatch:        &awswafv2.CfnWebACL_FieldToMatchProperty{UriPath: map[string]any{}},
			RegexString:         jsii.String(st.PathRegex),
			TextTransformations: noTransform,
		}}
	case st.HeaderPresent != "":
		return &awswafv2.CfnWebACL_StatementProperty{SizeConstraintStatement: &awswafv2.CfnWebACL_SizeConstraintStatementProperty{
			// SingleHeader is raw JSON to CloudFormation: the typed struct
			// would be written with a lower-case "name".
			FieldToMatch:        &awswafv2.CfnWebACL_FieldToMatchProperty{SingleHeader: map[string]any{"Name": st.HeaderPresent}},
			ComparisonOperator:  jsii.String("GT"),
			Size:                jsii.Number(0),
			TextTransformations: noTransform,
		}}
	case st.Label != "":
		return &awswafv2.CfnWebACL_StatementProperty{LabelMatchStatement: &awswafv2.CfnWebACL_LabelMatchStatementProperty{
			Scope: jsii.String("LABEL"), Key: jsii.String(st.Label),
		}}
	}
	panic(fmt.Sprintf("stacks: empty WAF statement %+v", st))
}

// wafRules are the web ACL's rules for plan, and its custom response
// bodies.
func wafRules(plan ratelimits.EdgePlan) ([]any, map[string]any) {
	var rules []any
	for _, c := range plan.Claims {
		var labels []any
		for _, l := range c.Labels {
			labels = append(labels, &awswafv2.CfnWebACL_LabelProperty{Name: jsii.String(l)})
		}
		rules = append(rules, &awswafv2.CfnWebACL_RuleProperty{
			Name:             jsii.String(c.Name),
			Priority:         jsii.Number(float64(c.Priority)),
			Action:           &awswafv2.CfnWebACL_RuleActionProperty{Count: &awswafv2.CfnWebACL_CountActionProperty{}},
			RuleLabels:       &labels,
			Statement:        wafStatement(c.Statement),
			VisibilityConfig: visibility(c.Name),
		})
	}
	bodies := map[string]any{}
	for _, r := range plan.Limits {
		rate := &awswafv2.CfnWebACL_RateBasedStatementProperty{
			Limit:               jsii.Number(float64(r.Limit)),
			EvaluationWindowSec: jsii.Number(float64(r.EvaluationWindowSec)),
			AggregateKeyType:    jsii.String(r.AggregateKeyType),
			ScopeDownStatement:  wafStatement(r.ScopeDown),
		}
		if len(r.CustomKeys) > 0 {
			var keys []any
			for _, k := range r.CustomKeys {
				if k.IP {
					keys = append(keys, &awswafv2.CfnWebACL_RateBasedStatementCustomKeyProperty{Ip: map[string]any{}})
				} else {
					keys = append(keys, &awswafv2.CfnWebACL_RateBasedStatementCustomKeyProperty{
						Header: &awswafv2.CfnWebACL_RateLimitHeaderProperty{Name: jsii.String(k.Header), TextTransformations: noTransform}})
				}
			}
			rate.CustomKeys = &keys
		}
		key := WAFBodyKey(r.Seq)
		bodies[key] = &awswafv2.CfnWebACL_CustomResponseBodyProperty{ContentType: jsii.String("APPLICATION_JSON"), Content: jsii.String(WAFBody(r))}
		rules = append(rules, &awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String(r.Name),
			Priority: jsii.Number(float64(r.Priority)),
			Action: &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{
				CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{
					ResponseCode:          jsii.Number(429),
					CustomResponseBodyKey: jsii.String(key),
					// WAF decides over its evaluation window: waiting that
					// long always finds the estimate back under the limit.
					ResponseHeaders: &[]any{&awswafv2.CfnWebACL_CustomHTTPHeaderProperty{
						Name: jsii.String("Retry-After"), Value: jsii.String(fmt.Sprint(r.EvaluationWindowSec))}},
				},
			}},
			Statement:        &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: rate},
			VisibilityConfig: visibility(r.Name),
		})
	}
	return rules, bodies
}

// webACL defines the regional web ACL of plan and associates it with the
// stage.
func (s *RegionStack) webACL(plan ratelimits.EdgePlan, stageARN *string) awswafv2.CfnWebACL {
	rules, bodies := wafRules(plan)
	acl := awswafv2.NewCfnWebACL(s.Stack, jsii.String("ApiRateLimits"), &awswafv2.CfnWebACLProps{
		Name:  jsii.String(*s.Stack.StackName() + "-api"),
		Scope: jsii.String("REGIONAL"),
		Description: jsii.String(fmt.Sprintf("agentplane %s: the rate-limit table of the interface, %d rows, generated by ratelimits.Edge",
			plan.Region, len(plan.Limits))),
		DefaultAction:        &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		VisibilityConfig:     visibility(*s.Stack.StackName() + "-api"),
		Rules:                &rules,
		CustomResponseBodies: &bodies,
	})
	awswafv2.NewCfnWebACLAssociation(s.Stack, jsii.String("ApiRateLimitsAssociation"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: stageARN,
		WebAclArn:   acl.AttrArn(),
	})
	return acl
}

// WAFTable is the generated table of infra/README.md: every rule of both
// regions' web ACLs as the stacks deploy them (the same plans), with the
// approximation of each row.
func WAFTable(us, eu ratelimits.EdgePlan) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	w("Web ACL capacity: US %d WCU, EU %d WCU (%d claim rules and %d rate-based rules each; a web ACL holds up to 5,000).\n\n",
		us.WCU(), eu.WCU(), len(us.Claims), len(us.Limits))
	w("#### Rate-based rules (Block, 429)\n\n")
	w("| # | Rule | Priority | Category | Aggregation | Interface US | WAF US | Interface EU | WAF EU | Approximation |\n")
	w("|---|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range us.Limits {
		e := eu.Limits[i]
		why := r.Approximation
		if e.Approximation != r.Approximation {
			why = "US: " + r.Approximation + ". EU: " + e.Approximation
		}
		w("| %d | `%s` | %d | %s | %s | %s | %d / %d s | %s | %d / %d s | %s |\n", r.Seq, r.Name, r.Priority, r.Category, r.Aggregation(),
			r.Interface, r.Limit, r.EvaluationWindowSec, e.Interface, e.Limit, e.EvaluationWindowSec, cell(why))
	}
	w("\n#### Claim rules (Count, labels), in order\n\n")
	w("Each adds `%s` and its row's label, and matches only requests no earlier claim took.\n\n", ratelimits.LabelClaimed)
	w("| Priority | Rule | Row | Statement |\n|---|---|---|---|\n")
	for _, c := range us.Claims {
		w("| %d | `%s` | %d | %s |\n", c.Priority, c.Name, c.Seq, cell(describe(c.Statement)))
	}
	return b.String()
}

// describe renders a statement as text.
func describe(s ratelimits.Statement) string {
	join := func(sts []ratelimits.Statement, sep string) string {
		var parts []string
		for _, c := range sts {
			parts = append(parts, describe(c))
		}
		return strings.Join(parts, sep)
	}
	switch {
	case len(s.And) > 0:
		return join(s.And, " and ")
	case len(s.Or) > 0:
		return "(" + join(s.Or, " or ") + ")"
	case s.Not != nil:
		return "not " + describe(*s.Not)
	case s.Method != "":
		return "method " + s.Method
	case s.PathRegex != "":
		return "path `" + s.PathRegex + "`"
	case s.HeaderPresent != "":
		return "header `" + s.HeaderPresent + "`"
	case s.Label != "":
		return "label `" + s.Label + "`"
	}
	return ""
}

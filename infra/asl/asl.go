// Package asl extracts the Amazon States Language definitions of the state
// machines in a synthesized CloudFormation template, with CloudFormation's
// intrinsic functions resolved to literal strings, so local tools
// (asl-validator, tests) can read them. Pseudo parameters become the
// stack's region, the "aws" partition and a placeholder account; a
// resource's Ref becomes its logical id and its Arn a well-formed ARN
// built from its type and logical id.
package asl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Account is the account id written into resolved ARNs.
const Account = "123456789012"

// Template is the part of a CloudFormation template this package reads.
type Template struct {
	Resources map[string]Resource `json:"Resources"`
}

// Resource is one template resource.
type Resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// StateMachine is one resolved definition.
type StateMachine struct {
	LogicalID string
	// Name is the StateMachineName property, when set.
	Name       string
	Definition map[string]any
}

// StateMachines resolves the definitions of every
// AWS::StepFunctions::StateMachine in tpl, sorted by logical id.
func StateMachines(tpl []byte, region string) ([]StateMachine, error) {
	var t Template
	if err := json.Unmarshal(tpl, &t); err != nil {
		return nil, fmt.Errorf("asl: template: %w", err)
	}
	r := resolver{t: t, region: region}
	var out []StateMachine
	for id, res := range t.Resources {
		if res.Type != "AWS::StepFunctions::StateMachine" {
			continue
		}
		sm := StateMachine{LogicalID: id}
		if n, ok := res.Properties["StateMachineName"]; ok {
			name, err := r.str(n)
			if err != nil {
				return nil, fmt.Errorf("asl: %s: StateMachineName: %w", id, err)
			}
			sm.Name = name
		}
		raw, ok := res.Properties["DefinitionString"]
		if !ok {
			return nil, fmt.Errorf("asl: %s has no DefinitionString", id)
		}
		def, err := r.str(raw)
		if err != nil {
			return nil, fmt.Errorf("asl: %s: %w", id, err)
		}
		if err := json.Unmarshal([]byte(def), &sm.Definition); err != nil {
			return nil, fmt.Errorf("asl: %s: definition is not JSON: %w", id, err)
		}
		out = append(out, sm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out, nil
}

type resolver struct {
	t      Template
	region string
}

// str resolves v, which must come out as a string.
func (r resolver) str(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		if len(x) != 1 {
			return "", fmt.Errorf("object %v is not an intrinsic function", keys(x))
		}
		for fn, arg := range x {
			switch fn {
			case "Ref":
				return r.ref(arg)
			case "Fn::GetAtt":
				return r.getAtt(arg)
			case "Fn::Join":
				return r.join(arg)
			default:
				return "", fmt.Errorf("intrinsic %s is not supported", fn)
			}
		}
	}
	return "", fmt.Errorf("%T is not a string", v)
}

func (r resolver) ref(arg any) (string, error) {
	name, ok := arg.(string)
	if !ok {
		return "", fmt.Errorf("a Ref of %T", arg)
	}
	switch name {
	case "AWS::Partition":
		return "aws", nil
	case "AWS::Region":
		return r.region, nil
	case "AWS::AccountId":
		return Account, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	if _, ok := r.t.Resources[name]; !ok {
		return "", fmt.Errorf("a Ref to unknown resource %s", name)
	}
	return name, nil
}

// arnShapes maps resource types to their ARN's service and resource part.
var arnShapes = map[string][2]string{
	"AWS::Lambda::Function":            {"lambda", "function:"},
	"AWS::CodeBuild::Project":          {"codebuild", "project/"},
	"AWS::SQS::Queue":                  {"sqs", ""},
	"AWS::SNS::Topic":                  {"sns", ""},
	"AWS::DynamoDB::Table":             {"dynamodb", "table/"},
	"AWS::StepFunctions::StateMachine": {"states", "stateMachine:"},
	"AWS::Events::EventBus":            {"events", "event-bus/"},
}

func (r resolver) getAtt(arg any) (string, error) {
	parts, ok := arg.([]any)
	if !ok || len(parts) != 2 {
		return "", fmt.Errorf("Fn::GetAtt needs [resource, attribute]")
	}
	id, _ := parts[0].(string)
	attr, _ := parts[1].(string)
	res, ok := r.t.Resources[id]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt of unknown resource %s", id)
	}
	if attr != "Arn" {
		return "", fmt.Errorf("Fn::GetAtt %s.%s: only Arn is supported", id, attr)
	}
	shape, ok := arnShapes[res.Type]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s.Arn: no ARN shape for %s", id, res.Type)
	}
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s%s", shape[0], r.region, Account, shape[1], id), nil
}

func (r resolver) join(arg any) (string, error) {
	parts, ok := arg.([]any)
	if !ok || len(parts) != 2 {
		return "", fmt.Errorf("Fn::Join needs [separator, list]")
	}
	sep, ok := parts[0].(string)
	list, ok2 := parts[1].([]any)
	if !ok || !ok2 {
		return "", fmt.Errorf("Fn::Join needs a string separator and a list")
	}
	out := make([]string, len(list))
	for i, p := range list {
		s, err := r.str(p)
		if err != nil {
			return "", err
		}
		out[i] = s
	}
	return strings.Join(out, sep), nil
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

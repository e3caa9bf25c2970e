package workflow_test

import (
	"context"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

func TestOrder(t *testing.T) {
	run := func(ctx context.Context, in workflow.State) (workflow.State, error) { return in, nil }
	d := workflow.Definition{Name: "b", Steps: []workflow.Step{
		{Name: "onfail", FailureOnly: true, Run: run},
		{Name: "a", Run: run, OnFailure: "onfail"},
		{Name: "cleanup", FailureOnly: true, Run: run},
		{Name: "b", AWSService: "codebuild"},
	}}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if first, ok := d.First(); !ok || first != "a" {
		t.Errorf("First = %q", first)
	}
	if next, ok := d.Next("a"); !ok || next != "b" {
		t.Errorf("Next(a) = %q", next)
	}
	if next, ok := d.Next("b"); ok {
		t.Errorf("Next(b) = %q, want the end", next)
	}
	if _, ok := d.Next("zz"); ok {
		t.Error("Next of an unknown step")
	}
	bad := d
	bad.Steps = append([]workflow.Step{}, d.Steps...)
	bad.Steps[1].OnFailure = "b" // not failure-only
	if bad.Validate() == nil {
		t.Error("OnFailure to a normal step accepted")
	}
	if (workflow.Definition{Name: "x", Steps: []workflow.Step{{Name: "f", FailureOnly: true, Run: run}}}).Validate() == nil {
		t.Error("a definition with only failure steps accepted")
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestExport(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "manifest.json"), `{"artifacts":{
		"S-EU":{"type":"aws:cloudformation:stack","environment":"aws://123/eu-west-1","properties":{"templateFile":"S-EU.template.json"}},
		"Tree":{"type":"cdk:tree"}}}`)
	write(t, filepath.Join(dir, "S-EU.template.json"), `{"Resources":{
		"Fn":{"Type":"AWS::Lambda::Function"},
		"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"StateMachineName":"S-EU-build",
		  "DefinitionString":{"Fn::Join":["",["{\"StartAt\":\"A\",\"States\":{\"A\":{\"Type\":\"Task\",\"Resource\":\"",{"Fn::GetAtt":["Fn","Arn"]},"\",\"End\":true}}}"]]}}}}}`)
	// A stale export of a state machine that no longer exists goes away.
	if err := os.MkdirAll(filepath.Join(dir, "asl"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "asl", "S-EU.old.asl.json"), `{}`)

	files, err := export(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "asl", "S-EU.build.asl.json")
	if len(files) != 1 || files[0] != want {
		t.Fatalf("wrote %v, want %s", files, want)
	}
	var def struct {
		StartAt string
		States  map[string]struct{ Resource string }
	}
	raw, _ := os.ReadFile(want)
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	if got := def.States["A"].Resource; got != "arn:aws:lambda:eu-west-1:123456789012:function:Fn" {
		t.Errorf("resource %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "asl", "S-EU.old.asl.json")); !os.IsNotExist(err) {
		t.Errorf("stale export kept: %v", err)
	}
}

func TestExportFailures(t *testing.T) {
	for name, tc := range map[string]struct{ manifest, template string }{
		"no manifest": {},
		"no stacks":   {manifest: `{"artifacts":{}}`},
		"no state machines": {
			manifest: `{"artifacts":{"S":{"type":"aws:cloudformation:stack","environment":"aws://unknown-account/unknown-region","properties":{"templateFile":"S.template.json"}}}}`,
			template: `{"Resources":{}}`},
		"unresolvable definition": {
			manifest: `{"artifacts":{"S":{"type":"aws:cloudformation:stack","environment":"aws://1/us-east-1","properties":{"templateFile":"S.template.json"}}}}`,
			template: `{"Resources":{"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"DefinitionString":{"Fn::Sub":"x"}}}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.manifest != "" {
				write(t, filepath.Join(dir, "manifest.json"), tc.manifest)
			}
			if tc.template != "" {
				write(t, filepath.Join(dir, "S.template.json"), tc.template)
			}
			if files, err := export(dir); err == nil {
				t.Errorf("no error; wrote %v", files)
			}
		})
	}
}

package asl_test

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/infra/asl"
)

const template = `{
  "Resources": {
    "StepFn1234": {"Type": "AWS::Lambda::Function", "Properties": {}},
    "Proj5678": {"Type": "AWS::CodeBuild::Project", "Properties": {}},
    "Machine": {
      "Type": "AWS::StepFunctions::StateMachine",
      "Properties": {
        "StateMachineName": "Stack-build",
        "DefinitionString": {"Fn::Join": ["", [
          "{\"StartAt\":\"A\",\"States\":{\"A\":{\"Type\":\"Task\",\"Resource\":\"arn:",
          {"Ref": "AWS::Partition"},
          ":states:::lambda:invoke\",\"Parameters\":{\"FunctionName\":\"",
          {"Fn::GetAtt": ["StepFn1234", "Arn"]},
          "\"},\"Next\":\"B\"},\"B\":{\"Type\":\"Task\",\"Resource\":\"arn:aws:states:::codebuild:startBuild.sync\",\"Parameters\":{\"ProjectName\":\"",
          {"Ref": "Proj5678"},
          "\",\"Region\":\"",
          {"Ref": "AWS::Region"},
          "\"},\"End\":true}}}"
        ]]}
      }
    },
    "Other": {"Type": "AWS::S3::Bucket", "Properties": {}}
  }
}`

func TestStateMachines(t *testing.T) {
	sms, err := asl.StateMachines([]byte(template), "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sms) != 1 || sms[0].LogicalID != "Machine" || sms[0].Name != "Stack-build" {
		t.Fatalf("%+v", sms)
	}
	states := sms[0].Definition["States"].(map[string]any)
	a := states["A"].(map[string]any)
	if a["Resource"] != "arn:aws:states:::lambda:invoke" {
		t.Errorf("A.Resource %v", a["Resource"])
	}
	if fn := a["Parameters"].(map[string]any)["FunctionName"]; fn != "arn:aws:lambda:eu-west-1:123456789012:function:StepFn1234" {
		t.Errorf("FunctionName %v", fn)
	}
	b := states["B"].(map[string]any)["Parameters"].(map[string]any)
	if b["ProjectName"] != "Proj5678" || b["Region"] != "eu-west-1" {
		t.Errorf("B.Parameters %v", b)
	}
}

func TestStateMachinesErrors(t *testing.T) {
	for name, tpl := range map[string]string{
		"not json":          `{`,
		"unknown ref":       `{"Resources":{"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"DefinitionString":{"Ref":"Nope"}}}}}`,
		"unsupported fn":    `{"Resources":{"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"DefinitionString":{"Fn::Sub":"x"}}}}}`,
		"no definition":     `{"Resources":{"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{}}}}`,
		"definition not js": `{"Resources":{"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"DefinitionString":"{x"}}}}`,
		"getatt of bucket":  `{"Resources":{"B":{"Type":"AWS::S3::Bucket"},"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"DefinitionString":{"Fn::GetAtt":["B","Arn"]}}}}}`,
	} {
		if _, err := asl.StateMachines([]byte(tpl), "us-east-1"); err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "%!") {
			t.Errorf("%s: badly formatted error %v", name, err)
		}
	}
}

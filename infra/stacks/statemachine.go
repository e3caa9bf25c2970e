package stacks

import (
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodebuild"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctionstasks"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// ServiceCodeBuild is the Step.AWSService value of steps that run as a
// CodeBuild build.
const ServiceCodeBuild = "codebuild"

// lambdaServiceErrors are the Lambda invoke errors worth retrying.
var lambdaServiceErrors = []string{
	"Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException",
	"Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException",
}

// codeBuildServiceErrors are the CodeBuild StartBuild errors worth retrying.
var codeBuildServiceErrors = []string{"CodeBuild.AWSCodeBuildException", "CodeBuild.AccountLimitExceededException"}

// StateMachineOptions says where a definition's steps run.
type StateMachineOptions struct {
	// Name is the state machine's physical name (its ARN is derived from
	// it, so functions can be told the ARN without a dependency cycle).
	Name string
	// StepFunction runs the Lambda steps (the runner group's function).
	StepFunction awslambda.IFunction
	// Projects are the CodeBuild projects of the steps with AWSService
	// "codebuild", by step name.
	Projects map[string]awscodebuild.IProject
	// Logs receives the execution history (level ALL, without data).
	Logs awslogs.ILogGroup
	// Timeout bounds an execution; 0 means two hours.
	Timeout time.Duration
}

// EndStateNames are the names of a definition's final states.
func EndStateNames(def workflow.Definition) (succeeded, failed string) {
	return def.Name + " succeeded", def.Name + " failed"
}

// StepPayload is the Lambda payload of a step's Task state, the shape
// App.RunStep and sfnstart.Dispatch read.
func StepPayload(def workflow.Definition, step workflow.Step) map[string]any {
	return map[string]any{"workflow": def.Name, "step": step.Name, "state": awsstepfunctions.JsonPath_EntirePayload()}
}

// checkDefinition is CheckSteps plus what the state machine needs from
// opts: a step function and a project per CodeBuild step.
func checkDefinition(def workflow.Definition, opts StateMachineOptions) error {
	if err := CheckSteps(def); err != nil {
		return err
	}
	for _, s := range def.Steps {
		if s.AWSService == ServiceCodeBuild && opts.Projects[s.Name] == nil {
			return fmt.Errorf("workflow %s: step %s runs on CodeBuild but has no project", def.Name, s.Name)
		}
	}
	if opts.StepFunction == nil {
		return fmt.Errorf("workflow %s: no step function", def.Name)
	}
	return nil
}

// CheckSteps is workflow.Definition.Validate without the Run check (the
// CDK app reads step metadata only), plus what Step Functions requires of
// state names.
func CheckSteps(def workflow.Definition) error {
	if def.Name == "" {
		return fmt.Errorf("workflow definition without a name")
	}
	if _, ok := def.First(); !ok {
		return fmt.Errorf("workflow %s: no step to run", def.Name)
	}
	succeeded, failed := EndStateNames(def)
	names := map[string]bool{}
	for _, s := range def.Steps {
		switch {
		case s.Name == "" || len(s.Name) > 80:
			return fmt.Errorf("workflow %s: step name %q must be 1 to 80 characters", def.Name, s.Name)
		case names[s.Name]:
			return fmt.Errorf("workflow %s: step %s defined twice", def.Name, s.Name)
		case s.Name == succeeded || s.Name == failed:
			return fmt.Errorf("workflow %s: step name %q is taken by an end state", def.Name, s.Name)
		case s.AWSService != "" && s.AWSService != ServiceCodeBuild:
			return fmt.Errorf("workflow %s: step %s: AWS service %q has no integration here", def.Name, s.Name, s.AWSService)
		}
		names[s.Name] = true
	}
	for _, s := range def.Steps {
		if s.OnFailure == "" {
			continue
		}
		h, ok := def.Step(s.OnFailure)
		if !ok || !h.FailureOnly {
			return fmt.Errorf("workflow %s: step %s: OnFailure %q is not a failure-only step", def.Name, s.Name, s.OnFailure)
		}
	}
	return nil
}

// StateMachineFromDefinition builds the Step Functions state machine of a
// workflow definition, mirroring what the local runner (shared/kernel/workflow/
// local) does with it:
//   - each step is a Task state named after the step: a Lambda invoke of
//     the step function with {"workflow", "step", "state": $} whose
//     payload becomes the next state, or for AWSService "codebuild" steps
//     a CodeBuild build (RUN_JOB) of the step's project, which runs the
//     same Go step and exports the next state (StateVariable);
//   - steps follow each other in definition order (failure-only steps are
//     skipped) and the last one leads to "<name> succeeded";
//   - errors named workflow.TransientErrorName are retried MaxAttempts-1
//     times from Backoff, doubling, and Lambda service errors are retried;
//   - a step with OnFailure catches every error into $.error and goes to
//     its handler step, which then ends in "<name> failed" (as does a
//     failing handler); a step without one fails the execution.
func StateMachineFromDefinition(scope constructs.Construct, id string, def workflow.Definition, opts StateMachineOptions) (awsstepfunctions.StateMachine, error) {
	if err := checkDefinition(def, opts); err != nil {
		return nil, err
	}
	sc := constructs.NewConstruct(scope, jsii.String(id))
	succeededName, failedName := EndStateNames(def)
	succeeded := awsstepfunctions.NewSucceed(sc, jsii.String("Succeeded"), &awsstepfunctions.SucceedProps{
		StateName: jsii.String(succeededName),
	})
	failed := awsstepfunctions.NewFail(sc, jsii.String("Failed"), &awsstepfunctions.FailProps{
		StateName: jsii.String(failedName),
		Error:     jsii.String(workflow.FailedErrorName),
		Cause:     jsii.String("a step failed; its error is in the execution history"),
	})
	errorPath := jsii.String("$." + workflow.ErrorKey)
	all := &[]*string{awsstepfunctions.Errors_ALL()}

	tasks := map[string]awsstepfunctions.TaskStateBase{}
	for _, s := range def.Steps {
		if s.AWSService == ServiceCodeBuild {
			tasks[s.Name] = codeBuildTask(sc, def, s, opts.Projects[s.Name])
		} else {
			tasks[s.Name] = lambdaTask(sc, def, s, opts.StepFunction)
		}
	}
	for _, s := range def.Steps {
		t := tasks[s.Name]
		if s.FailureOnly {
			t.Next(failed)
			t.AddCatch(failed, &awsstepfunctions.CatchProps{Errors: all, ResultPath: errorPath})
			continue
		}
		if next, ok := def.Next(s.Name); ok {
			t.Next(tasks[next])
		} else {
			t.Next(succeeded)
		}
		if s.OnFailure != "" {
			t.AddCatch(tasks[s.OnFailure], &awsstepfunctions.CatchProps{Errors: all, ResultPath: errorPath})
		}
	}
	first, _ := def.First()
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Hour
	}
	props := &awsstepfunctions.StateMachineProps{
		StateMachineName: jsii.String(opts.Name),
		Comment:          jsii.String("workflow " + def.Name + ", generated from its Go definition"),
		DefinitionBody:   awsstepfunctions.DefinitionBody_FromChainable(tasks[first]),
		StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
		Timeout:          awscdk.Duration_Seconds(jsii.Number(timeout.Seconds())),
		TracingEnabled:   jsii.Bool(true),
	}
	if opts.Name == "" {
		props.StateMachineName = nil
	}
	if opts.Logs != nil {
		// Execution data stays out of the logs: states may carry
		// repository and deployment settings.
		props.Logs = &awsstepfunctions.LogOptions{
			Destination:          opts.Logs,
			Level:                awsstepfunctions.LogLevel_ALL,
			IncludeExecutionData: jsii.Bool(false),
		}
	}
	return awsstepfunctions.NewStateMachine(sc, jsii.String("StateMachine"), props), nil
}

func lambdaTask(sc constructs.Construct, def workflow.Definition, s workflow.Step, fn awslambda.IFunction) awsstepfunctions.TaskStateBase {
	payload := StepPayload(def, s)
	t := awsstepfunctionstasks.NewLambdaInvoke(sc, jsii.String("Step-"+s.Name), &awsstepfunctionstasks.LambdaInvokeProps{
		StateName:      jsii.String(s.Name),
		Comment:        comment(s),
		LambdaFunction: fn,
		Payload:        awsstepfunctions.TaskInput_FromObject(&payload),
		// The function returns the next state.
		OutputPath: jsii.String("$.Payload"),
		// Listed below instead, with TooManyRequests added.
		RetryOnServiceExceptions: jsii.Bool(false),
	})
	t.AddRetry(&awsstepfunctions.RetryProps{
		Errors:      jsii.Strings(lambdaServiceErrors...),
		Interval:    awscdk.Duration_Seconds(jsii.Number(2)),
		MaxAttempts: jsii.Number(6),
		BackoffRate: jsii.Number(2),
	})
	addTransientRetry(t, s, workflow.TransientErrorName)
	return t
}

func codeBuildTask(sc constructs.Construct, def workflow.Definition, s workflow.Step, project awscodebuild.IProject) awsstepfunctions.TaskStateBase {
	plain := awscodebuild.BuildEnvironmentVariableType_PLAINTEXT
	t := awsstepfunctionstasks.NewCodeBuildStartBuild(sc, jsii.String("Step-"+s.Name), &awsstepfunctionstasks.CodeBuildStartBuildProps{
		StateName:          jsii.String(s.Name),
		Comment:            comment(s),
		Project:            project,
		IntegrationPattern: awsstepfunctions.IntegrationPattern_RUN_JOB,
		EnvironmentVariablesOverride: &map[string]*awscodebuild.BuildEnvironmentVariable{
			"AGENTPLANE_WORKFLOW": {Type: plain, Value: jsii.String(def.Name)},
			"AGENTPLANE_STEP":     {Type: plain, Value: jsii.String(s.Name)},
			"AGENTPLANE_STATE":    {Type: plain, Value: awsstepfunctions.JsonPath_JsonToString(awsstepfunctions.JsonPath_EntirePayload())},
		},
		// The build runs the step's Go code and exports the step's new
		// state as its only exported variable; that state is the output.
		ResultSelector: &map[string]any{
			"state": awsstepfunctions.JsonPath_StringToJson(awsstepfunctions.JsonPath_StringAt(jsii.String("$.Build.ExportedEnvironmentVariables[0].Value"))),
		},
		OutputPath: jsii.String("$.state"),
	})
	t.AddRetry(&awsstepfunctions.RetryProps{
		Errors:      jsii.Strings(codeBuildServiceErrors...),
		Interval:    awscdk.Duration_Seconds(jsii.Number(10)),
		MaxAttempts: jsii.Number(4),
		BackoffRate: jsii.Number(2),
	})
	return t
}

// addTransientRetry retries errName as the local runner retries
// transient errors: MaxAttempts tries in all, from Backoff, doubling.
func addTransientRetry(t awsstepfunctions.TaskStateBase, s workflow.Step, errName string) {
	if s.MaxAttempts <= 1 {
		return
	}
	interval := math.Max(1, math.Ceil(s.Backoff.Seconds()))
	t.AddRetry(&awsstepfunctions.RetryProps{
		Errors:      jsii.Strings(errName),
		Interval:    awscdk.Duration_Seconds(jsii.Number(interval)),
		MaxAttempts: jsii.Number(float64(s.MaxAttempts - 1)),
		BackoffRate: jsii.Number(2),
	})
}

func comment(s workflow.Step) *string {
	if s.Comment == "" {
		return nil
	}
	return jsii.String(s.Comment)
}

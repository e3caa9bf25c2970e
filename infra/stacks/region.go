package stacks

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodebuild"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/shared/routes"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// StageName is the REST API's stage (the first part of the API URL's path).
const StageName = "prod"

// Settings of the functions by role.
const (
	apiTimeoutSeconds    = 29 // API Gateway's integration timeout
	workerTimeoutSeconds = 120
	stepTimeoutSeconds   = 900
	sweepTimeoutSeconds  = 300
	memoryMB             = 512
	// maxReceives is how often a build message is tried before it moves
	// to the dead-letter queue.
	maxReceives = 5
	// The stage's throttle (requests per second, burst): a ceiling well
	// under the account's regional limit, so one installation cannot
	// starve others in the account; raise it with the account's quota.
	apiRateLimit  = 1000
	apiBurstLimit = 2000
)

// RegionStackProps configure one region's stack.
type RegionStackProps struct {
	awscdk.StackProps
	// RegionName is the hosted region, "us" or "eu" (AGENTPLANE_REGION_NAME).
	RegionName string
	// Functions are the Lambda functions to create, the directory names of
	// functions/ (FunctionNames).
	Functions []string
	// CodeDir holds each function's deployment package, <fn>.zip
	// (dist/, written by scripts/build-lambdas.sh).
	CodeDir string
	// Groups is the route table (routes.Groups()).
	Groups []routes.Group
	// Workflows become state machines (builds.Definition()).
	Workflows []workflow.Definition
	// BaseURL is the public URL of the installation; by default the
	// execute-api URL of the stage.
	BaseURL string
}

// RegionStack is one region's stack and the constructs tests look at.
type RegionStack struct {
	awscdk.Stack
	Table         awsdynamodb.Table
	Bucket        awss3.Bucket
	LogBucket     awss3.Bucket
	SecretsKey    awskms.Key
	Queue         awssqs.Queue
	DeadLetters   awssqs.Queue
	Functions     map[string]awslambda.Function
	API           awsapigateway.RestApi
	StateMachines map[string]awsstepfunctions.StateMachine
}

// NewRegionStack defines one region of agentplane. It checks its inputs
// first and returns an error rather than a half-built stack.
func NewRegionStack(scope constructs.Construct, id string, props *RegionStackProps) (*RegionStack, error) {
	if props == nil {
		return nil, fmt.Errorf("stack %s: no props", id)
	}
	if props.RegionName != "us" && props.RegionName != "eu" {
		return nil, fmt.Errorf("stack %s: region name must be us or eu, not %q", id, props.RegionName)
	}
	if err := checkFunctions(props.Functions, props.Groups); err != nil {
		return nil, fmt.Errorf("stack %s: %w", id, err)
	}
	plan, err := planAPI(props.Groups)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", id, err)
	}
	for _, def := range props.Workflows {
		if err := CheckSteps(def); err != nil {
			return nil, fmt.Errorf("stack %s: %w", id, err)
		}
	}
	for _, fn := range props.Functions {
		if _, err := os.Stat(zipPath(props, fn)); err != nil {
			return nil, fmt.Errorf("stack %s: function %s: %w (run scripts/build-lambdas.sh)", id, fn, err)
		}
	}

	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	awscdk.Tags_Of(stack).Add(jsii.String("agentplane:region"), jsii.String(props.RegionName), nil)
	s := &RegionStack{Stack: stack, Functions: map[string]awslambda.Function{}, StateMachines: map[string]awsstepfunctions.StateMachine{}}
	s.data()
	s.queues()

	api := awsapigateway.NewRestApi(stack, jsii.String("Api"), &awsapigateway.RestApiProps{
		RestApiName: jsii.String(id + "-api"),
		Description: jsii.String("agentplane " + props.RegionName + ": every route of shared/routes, one Lambda function per route group"),
		// Bodies reach the functions as base64 and go back decoded, so
		// binary payloads survive the proxy.
		BinaryMediaTypes: jsii.Strings("*/*"),
		EndpointTypes:    &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		CloudWatchRole:   jsii.Bool(true),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(StageName),
			TracingEnabled:       jsii.Bool(true),
			MetricsEnabled:       jsii.Bool(true),
			LoggingLevel:         awsapigateway.MethodLoggingLevel_ERROR,
			ThrottlingRateLimit:  jsii.Number(apiRateLimit),
			ThrottlingBurstLimit: jsii.Number(apiBurstLimit),
			DataTraceEnabled:     jsii.Bool(false),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(logGroup(stack, "ApiAccessLogs")),
			AccessLogFormat: awsapigateway.AccessLogFormat_JsonWithStandardFields(&awsapigateway.JsonWithStandardFieldProps{
				Caller: jsii.Bool(false), HttpMethod: jsii.Bool(true), Ip: jsii.Bool(true), Protocol: jsii.Bool(true),
				RequestTime: jsii.Bool(true), ResourcePath: jsii.Bool(true), ResponseLength: jsii.Bool(true),
				Status: jsii.Bool(true), User: jsii.Bool(false),
			}),
		},
	})
	s.API = api

	baseURL := props.BaseURL
	if baseURL == "" {
		// Built from the API's id, not api.Url(): that would make every
		// function depend on the deployment, which depends on them.
		baseURL = *awscdk.Fn_Join(jsii.String(""), jsii.Strings(
			"https://", *api.RestApiId(), ".execute-api.", *stack.Region(), ".", *stack.UrlSuffix(), "/"+StageName))
	}
	machines := map[string]string{}
	var machineARNs []*string
	for _, def := range props.Workflows {
		arn := stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("stateMachine"),
			ResourceName: jsii.String(machineName(id, def.Name)), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
		machines[def.Name] = *arn
		machineARNs = append(machineARNs, arn)
	}
	env := map[string]*string{
		"AGENTPLANE_MODE":           jsii.String("aws"),
		"AGENTPLANE_REGION_NAME":    jsii.String(props.RegionName),
		"AGENTPLANE_TABLE":          s.Table.TableName(),
		"AGENTPLANE_BUCKET":         s.Bucket.BucketName(),
		"AGENTPLANE_QUEUE_URL":      s.Queue.QueueUrl(),
		"AGENTPLANE_KMS_KEY_ID":     s.SecretsKey.KeyArn(),
		"AGENTPLANE_STATE_MACHINES": stack.ToJsonString(machines, nil),
		"AGENTPLANE_BASE_URL":       jsii.String(baseURL),
		"AGENTPLANE_LOG_LEVEL":      jsii.String("info"),
	}
	grant := func(p awsiam.IGrantable) {
		s.Table.GrantReadWriteData(p)
		p.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"),
			Resources: jsii.Strings(*s.Bucket.ArnForObjects(jsii.String("*"))),
		}))
		p.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:ListBucket"),
			Resources: &[]*string{s.Bucket.BucketArn()},
		}))
		s.Queue.GrantSendMessages(p)
		s.SecretsKey.Grant(p, jsii.String("kms:Encrypt"), jsii.String("kms:Decrypt"), jsii.String("kms:GenerateDataKey"))
		if len(machineARNs) > 0 {
			p.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings("states:StartExecution"),
				Resources: &machineARNs,
			}))
		}
	}

	groupDesc := map[string]string{}
	for _, g := range props.Groups {
		groupDesc[g.Name] = g.Description
	}
	for _, name := range props.Functions {
		timeout, desc := apiTimeoutSeconds, "route group "+name+": "+groupDesc[name]
		switch name {
		case FnBuildWorker:
			timeout, desc = workerTimeoutSeconds, "build queue consumer"
		case FnBuildStep:
			timeout, desc = stepTimeoutSeconds, "runs one workflow step for the state machines"
		case FnSweeper:
			timeout, desc = sweepTimeoutSeconds, "scheduled maintenance: expired records, pending deletions"
		}
		fn := s.function(name, desc, timeout, zipPath(props, name), env)
		grant(fn)
		s.Functions[name] = fn
	}

	integrations := map[string]awsapigateway.Integration{}
	for _, g := range props.Groups {
		integrations[g.Name] = awsapigateway.NewLambdaIntegration(s.Functions[g.Name], &awsapigateway.LambdaIntegrationOptions{
			Proxy: jsii.Bool(true),
			// One invoke permission per function for the whole API, not
			// two per method: keeps the stack far from CloudFormation's
			// resource limit as routes are added.
			ScopePermissionToMethod: jsii.Bool(false),
		})
	}
	addResources(api.Root(), plan, integrations)

	awslambdaeventsources.NewSqsEventSource(s.Queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
	}).Bind(s.Functions[FnBuildWorker])

	awsevents.NewRule(stack, jsii.String("SweepSchedule"), &awsevents.RuleProps{
		Description: jsii.String("runs the sweeper every minute"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Functions[FnSweeper], &awseventstargets.LambdaFunctionProps{
			// A missed sweep is not worth catching up: the next one comes
			// a minute later.
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(1)),
		})},
	})

	for _, def := range props.Workflows {
		projects := map[string]awscodebuild.IProject{}
		for _, st := range def.Steps {
			if st.AWSService == ServiceCodeBuild {
				p := s.stepProject(def, st, zipPath(props, FnBuildStep), env)
				grant(p)
				projects[st.Name] = p
			}
		}
		sm, err := StateMachineFromDefinition(stack, "Workflow"+pascal(def.Name), def, StateMachineOptions{
			Name:         machineName(id, def.Name),
			StepFunction: s.Functions[FnBuildStep],
			Projects:     projects,
			Logs:         logGroup(stack, "Workflow"+pascal(def.Name)+"Logs"),
		})
		if err != nil {
			return nil, fmt.Errorf("stack %s: %w", id, err)
		}
		s.StateMachines[def.Name] = sm
		out(stack, "StateMachine"+pascal(def.Name)+"Arn", sm.StateMachineArn(), "ARN of the "+def.Name+" workflow's state machine")
	}

	out(stack, "ApiUrl", api.Url(), "base URL of the REST API")
	out(stack, "TableName", s.Table.TableName(), "DynamoDB table")
	out(stack, "BucketName", s.Bucket.BucketName(), "S3 bucket for blobs")
	out(stack, "QueueUrl", s.Queue.QueueUrl(), "build queue")
	out(stack, "SecretsKeyArn", s.SecretsKey.KeyArn(), "KMS key for secrets")
	return s, nil
}

func zipPath(props *RegionStackProps, fn string) string {
	return filepath.Join(props.CodeDir, fn+".zip")
}

// machineName is a state machine's physical name: unique per stack, so
// two installations can share an account and region.
func machineName(stackID, workflowName string) string {
	name := stackID + "-" + workflowName
	if len(name) > 80 {
		name = name[:80]
	}
	return name
}

func out(stack awscdk.Stack, id string, value *string, desc string) {
	awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
}

func logGroup(scope constructs.Construct, id string) awslogs.LogGroup {
	return awslogs.NewLogGroup(scope, jsii.String(id), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
}

// data defines the table, the buckets and the secrets key.
func (s *RegionStack) data() {
	str := awsdynamodb.AttributeType_STRING
	s.Table = awsdynamodb.NewTable(s.Stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(store.AttrPK), Type: str},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(store.AttrSK), Type: str},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(store.AttrTTL),
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		DeletionProtection:  jsii.Bool(true),
		RemovalPolicy:       awscdk.RemovalPolicy_RETAIN,
	})
	for _, ix := range store.IndexNames {
		s.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(store.IndexPKAttr(ix)), Type: str},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(store.IndexSKAttr(ix)), Type: str},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}

	s.LogBucket = awss3.NewBucket(s.Stack, jsii.String("AccessLogs"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id: jsii.String("expire-access-logs"), Expiration: awscdk.Duration_Days(jsii.Number(90)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	s.Bucket = awss3.NewBucket(s.Stack, jsii.String("Blobs"), &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		Versioned:              jsii.Bool(true),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		ServerAccessLogsBucket: s.LogBucket,
		ServerAccessLogsPrefix: jsii.String("blobs/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("expire-old-versions"),
			NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(30)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(2)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})

	s.SecretsKey = awskms.NewKey(s.Stack, jsii.String("SecretsKey"), &awskms.KeyProps{
		Description:       jsii.String("agentplane: envelope key for deployment secrets"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
}

// queues defines the build queue and its dead-letter queue.
func (s *RegionStack) queues() {
	s.DeadLetters = awssqs.NewQueue(s.Stack, jsii.String("BuildDeadLetters"), &awssqs.QueueProps{
		EnforceSSL:      jsii.Bool(true),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	s.Queue = awssqs.NewQueue(s.Stack, jsii.String("BuildQueue"), &awssqs.QueueProps{
		EnforceSSL: jsii.Bool(true),
		Encryption: awssqs.QueueEncryption_SQS_MANAGED,
		// Six times the consumer's timeout, as Lambda advises for SQS.
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(6 * workerTimeoutSeconds)),
		RetentionPeriod:   awscdk.Duration_Days(jsii.Number(4)),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: s.DeadLetters, MaxReceiveCount: jsii.Number(maxReceives)},
	})
}

// function defines one Lambda function with its own role and log group.
func (s *RegionStack) function(name, desc string, timeout int, zip string, env map[string]*string) awslambda.Function {
	id := "Fn" + pascal(name)
	logs := logGroup(s.Stack, id+"Logs")
	role := awsiam.NewRole(s.Stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("agentplane function " + name),
	})
	// Only its own log group, instead of AWSLambdaBasicExecutionRole.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	return awslambda.NewFunction(s.Stack, jsii.String(id), &awslambda.FunctionProps{
		Description:   jsii.String("agentplane " + name + ": " + desc),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(zip), nil),
		MemorySize:    jsii.Number(memoryMB),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(float64(timeout))),
		Tracing:       awslambda.Tracing_ACTIVE,
		Environment:   &env,
		Role:          role,
		LogGroup:      logs,
		LoggingFormat: awslambda.LoggingFormat_JSON,
	})
}

// stepProject is the CodeBuild project of a workflow step with AWSService
// "codebuild": it runs the step's Go code (the build-step binary, in its
// CodeBuild mode) and hands the step's new state back to the state machine
// as an exported variable.
func (s *RegionStack) stepProject(def workflow.Definition, st workflow.Step, zip string, env map[string]*string) awscodebuild.Project {
	id := "Project" + pascal(def.Name) + pascal(st.Name)
	code := awss3assets.NewAsset(s.Stack, jsii.String(id+"Code"), &awss3assets.AssetProps{Path: jsii.String(zip)})
	vars := map[string]*awscodebuild.BuildEnvironmentVariable{}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		vars[k] = &awscodebuild.BuildEnvironmentVariable{Value: env[k]}
	}
	logs := logGroup(s.Stack, id+"Logs")
	return awscodebuild.NewProject(s.Stack, jsii.String(id), &awscodebuild.ProjectProps{
		Description: jsii.String(fmt.Sprintf("agentplane workflow %s, step %s", def.Name, st.Name)),
		Source:      awscodebuild.Source_S3(&awscodebuild.S3SourceProps{Bucket: code.Bucket(), Path: code.S3ObjectKey()}),
		BuildSpec:   awscodebuild.BuildSpec_FromObject(&stepBuildSpec),
		Environment: &awscodebuild.BuildEnvironment{
			BuildImage:  awscodebuild.LinuxArmBuildImage_AMAZON_LINUX_2023_STANDARD_3_0(),
			ComputeType: awscodebuild.ComputeType_SMALL,
		},
		EnvironmentVariables: &vars,
		EncryptionKey:        s.SecretsKey,
		Timeout:              awscdk.Duration_Minutes(jsii.Number(60)),
		Logging: &awscodebuild.LoggingOptions{CloudWatch: &awscodebuild.CloudWatchLoggingOptions{
			LogGroup: logs,
		}},
	})
}

// StateVariable is the exported CodeBuild variable that carries a step's
// new state back to the state machine.
const StateVariable = "AGENTPLANE_STATE_OUT"

// stepBuildSpec runs the build-step binary (the source is its deployment
// zip) once for the step named in AGENTPLANE_STEP with the state in
// AGENTPLANE_STATE (`bootstrap run-step FILE` writes the next state to
// FILE); the binary retries transient errors itself.
var stepBuildSpec = map[string]any{
	"version": "0.2",
	"env": map[string]any{
		"exported-variables": []string{StateVariable},
	},
	"phases": map[string]any{
		"build": map[string]any{
			"commands": []string{
				"chmod +x ./bootstrap",
				"./bootstrap run-step state.json",
				"export " + StateVariable + "=\"$(cat state.json)\"",
			},
		},
	},
}

// addResources creates the API's resources and methods from the plan.
func addResources(parent awsapigateway.IResource, n *apiNode, integrations map[string]awsapigateway.Integration) {
	for _, m := range n.methodNames() {
		parent.AddMethod(jsii.String(m), integrations[n.methods[m]], &awsapigateway.MethodOptions{
			// The functions authenticate (API keys, bearer tokens, SCIM
			// tokens) and answer in the interface's error shapes.
			AuthorizationType: awsapigateway.AuthorizationType_NONE,
		})
	}
	for _, p := range n.childParts() {
		child := parent.AddResource(jsii.String(p), nil)
		addResources(child, n.children[p], integrations)
	}
}

package stacks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodebuild"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// StageName is the REST APIs' stage (the first part of the execute-api
// URLs' path; the platform API's own host maps its root to it).
const StageName = "prod"

const (
	memoryMB = 512
	// batchSize is the SQS event source's batch (partial failures are
	// reported per message, so a large batch costs no redundant work).
	batchSize = 10
	// The platform API stage's throttle (requests per second, burst): a
	// ceiling well under the account's regional limit, so one
	// installation cannot starve others in the account; raise it with the
	// account's quota. Per-client limits are the web ACL's and the app's.
	apiRateLimit  = 1000
	apiBurstLimit = 2000
	// A host API's ceiling (the tool server: every call it serves makes
	// platform API calls, which the platform's limits count).
	hostRateLimit  = 100
	hostBurstLimit = 200
	// DefaultLinkSecretName is the Secrets Manager secret of the region
	// link's token: created (and replicated to the other region) by the
	// billing home's stack, read by name in both.
	DefaultLinkSecretName = "agentplane/region-link-token"
	// SignUpRoute is the operator's organization sign-up; the group
	// serving it gets AGENTPLANE_OPERATOR_TOKEN_SHA256.
	SignUpRoute = "POST /api/v1/organizations"
)

// BillingTopic is the topic of usage events: its consumer in the billing
// home records them; in the other region it forwards them to the billing
// home's queue (docs/regions.md).
const BillingTopic = billing.TopicUsage

// RegionStackProps configure one region's stack.
type RegionStackProps struct {
	awscdk.StackProps
	// RegionName is the hosted region, "us" or "eu" (AGENTPLANE_REGION_NAME).
	RegionName string
	// Sites are both regions' settings (SitesFromContext).
	Sites Sites
	// Layout is the checked catalog (NewLayout over catalog.Groups() and
	// the workflow definitions).
	Layout *Layout
	// CodeDir holds each group's deployment package, <group>.zip (dist/,
	// written by scripts/build-lambdas.sh).
	CodeDir string
	// UIAssetsDir holds the web UI's files; empty: the UI bucket gets
	// only UIConfigPath.
	UIAssetsDir string
	// OperatorTokenSHA256 is the hex SHA-256 of the operator's sign-up
	// token (empty: sign-up is off).
	OperatorTokenSHA256 string
	// LinkSecretName names the region link's secret
	// (DefaultLinkSecretName when empty).
	LinkSecretName string
}

// RegionStack is one region's stack and the constructs tests look at.
type RegionStack struct {
	awscdk.Stack
	Name       string
	Site       Site
	Layout     *Layout
	Table      awsdynamodb.Table
	Bucket     awss3.Bucket
	LogBucket  awss3.Bucket
	SecretsKey awskms.Key
	// The maps are keyed by group name (StateMachines by workflow name,
	// Projects by "workflow/step", APIs by host, "" the platform API).
	Functions     map[string]awslambda.Function
	Roles         map[string]awsiam.Role
	Queues        map[string]awssqs.Queue
	DeadLetters   map[string]awssqs.Queue
	Schedules     map[string]awsevents.Rule
	APIs          map[string]awsapigateway.RestApi
	API           awsapigateway.RestApi
	StateMachines map[string]awsstepfunctions.StateMachine
	Projects      map[string]awscodebuild.Project
	Network       *Network
	Domain        *PrivateDomain
	WebACL        awswafv2.CfnWebACL
	// Edge is the rate-limit plan the web ACL is built from.
	Edge ratelimits.EdgePlan
	UI   *UI
	// LinkSecret is the region link's secret (the billing home's stack
	// only; the other reads its replica by name).
	LinkSecret awssecretsmanager.Secret
	// Published is the hosted-address configuration the functions get.
	Published regions.Config
	// machineARNs are the state machines' ARNs, known before they exist.
	machineARNs    map[string]*string
	linkToken      *string
	linkSecretName string
}

// NewRegionStack defines one region of agentplane. It checks its inputs
// first and returns an error rather than a half-built stack.
func NewRegionStack(scope constructs.Construct, id string, props *RegionStackProps) (*RegionStack, error) {
	if props == nil || props.Layout == nil {
		return nil, fmt.Errorf("stack %s: no props or no layout", id)
	}
	if props.RegionName != "us" && props.RegionName != "eu" {
		return nil, fmt.Errorf("stack %s: region name must be us or eu, not %q", id, props.RegionName)
	}
	if err := props.Sites.Check(); err != nil {
		return nil, fmt.Errorf("stack %s: %w", id, err)
	}
	site := props.Sites.Of(props.RegionName)
	if site.StackID != id {
		return nil, fmt.Errorf("stack %s: the %s site names stack %q", id, props.RegionName, site.StackID)
	}
	if props.OperatorTokenSHA256 != "" && !sha256Hex.MatchString(props.OperatorTokenSHA256) {
		return nil, fmt.Errorf("stack %s: the operator token digest must be 64 lower-case hex digits", id)
	}
	if props.UIAssetsDir != "" {
		if st, err := os.Stat(props.UIAssetsDir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("stack %s: UI assets %s: not a directory", id, props.UIAssetsDir)
		}
	}
	l := props.Layout
	for _, g := range l.Groups {
		if _, err := os.Stat(zipPath(props, g.Name)); err != nil {
			return nil, fmt.Errorf("stack %s: function %s: %w (run scripts/build-lambdas.sh)", id, g.Name, err)
		}
	}
	signUp := ""
	for _, r := range l.Routes("") {
		if r.Pattern() == SignUpRoute {
			signUp = r.Group
		}
	}
	if props.OperatorTokenSHA256 != "" && signUp == "" {
		return nil, fmt.Errorf("stack %s: an operator token is set, but no group serves %s", id, SignUpRoute)
	}

	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	awscdk.Tags_Of(stack).Add(jsii.String("agentplane:region"), jsii.String(props.RegionName), nil)
	s := &RegionStack{
		Stack: stack, Name: props.RegionName, Site: site, Layout: l,
		Functions: map[string]awslambda.Function{}, Roles: map[string]awsiam.Role{}, Queues: map[string]awssqs.Queue{},
		DeadLetters: map[string]awssqs.Queue{}, Schedules: map[string]awsevents.Rule{}, APIs: map[string]awsapigateway.RestApi{},
		StateMachines: map[string]awsstepfunctions.StateMachine{}, Projects: map[string]awscodebuild.Project{},
		machineARNs: map[string]*string{},
	}
	s.data()
	s.Network = s.network(site)
	billingGroup := l.Consumers[BillingTopic]
	home := props.RegionName == string(regions.BillingHome)
	for _, g := range l.Groups {
		if g.HasQueue() {
			name := ""
			if home && g.Name == billingGroup {
				// The other region sends to it: its URL must be known
				// there before this stack exists.
				name = billingQueueName(site.StackID, g.Name)
			}
			s.queue(g, name)
		}
	}
	s.link(props, home)

	for _, host := range l.Hosts() {
		s.APIs[host] = s.restAPI(id, host)
	}
	s.API = s.APIs[""]
	// API Gateway's CloudWatch role is a setting of the account and
	// region: the platform API sets it, and the other stages, which log
	// too, wait for it.
	if account := s.API.Node().TryFindChild(jsii.String("Account")); account != nil {
		for host, api := range s.APIs {
			if host != "" {
				api.DeploymentStage().Node().AddDependency(account)
			}
		}
	}

	for _, w := range l.Workflows {
		// Derived from the physical name, so the functions that start it
		// can be told its ARN without depending on it (its tasks depend
		// on them).
		s.machineARNs[w.Definition.Name] = stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("stateMachine"),
			ResourceName: jsii.String(machineName(id, w.Definition.Name)), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
	}
	var egress, ingress []string
	for _, ip := range s.Network.EgressIPs {
		egress = append(egress, *ip)
	}
	for _, ip := range s.Network.IngressIPs {
		ingress = append(ingress, *ip)
	}
	s.Published = props.Sites.Published(props.RegionName, egress, ingress)

	envs := map[string]map[string]*string{}
	for _, g := range l.Groups {
		envs[g.Name] = s.environment(g, props, g.Name == signUp)
		roleName := ""
		if !home && g.Name == billingGroup {
			// The billing home's queue policy names this role.
			roleName = billingRoleName(site.StackID, g.Name)
		}
		fn := s.function(g, zipPath(props, g.Name), envs[g.Name], roleName)
		s.grant(fn, g)
		s.Functions[g.Name] = fn
		if g.HasQueue() {
			// The mapping grants the function receive, delete and
			// visibility changes on its own queue only.
			awslambdaeventsources.NewSqsEventSource(s.Queues[g.Name], &awslambdaeventsources.SqsEventSourceProps{
				BatchSize:               jsii.Number(batchSize),
				ReportBatchItemFailures: jsii.Bool(true),
			}).Bind(fn)
		}
		if g.Sweeps {
			s.Schedules[g.Name] = awsevents.NewRule(stack, jsii.String("Sweep"+pascal(g.Name)), &awsevents.RuleProps{
				Description: jsii.String("runs the periodic maintenance of group " + g.Name + " every minute"),
				Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
				Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{
					// A missed sweep is not worth catching up: the next
					// one comes a minute later.
					RetryAttempts: jsii.Number(0),
					MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(1)),
				})},
			})
		}
	}
	if billingGroup != "" {
		s.billingLink(props, billingGroup, home)
	}

	for host, api := range s.APIs {
		integrations := map[string]awsapigateway.Integration{}
		for _, g := range l.Groups {
			if len(g.Routes) == 0 || g.Host != host {
				continue
			}
			integrations[g.Name] = awsapigateway.NewLambdaIntegration(s.Functions[g.Name], &awsapigateway.LambdaIntegrationOptions{
				Proxy: jsii.Bool(true),
				// One invoke permission per function for the whole API,
				// not two per method: keeps the stack far from
				// CloudFormation's resource limit as routes are added.
				ScopePermissionToMethod: jsii.Bool(false),
			})
		}
		addResources(api.Root(), l.apis[host], integrations)
	}
	s.Domain = s.privateDomain(site, s.API, s.Network.APIEndpoint)
	s.Edge = EdgePlan(props.RegionName)
	s.WebACL = s.webACL(s.Edge, s.API.DeploymentStage().StageArn())

	for _, w := range l.Workflows {
		def := w.Definition
		runner, _ := l.Group(w.Group)
		projects := map[string]awscodebuild.IProject{}
		for _, st := range def.Steps {
			if st.AWSService == ServiceCodeBuild {
				p := s.stepProject(def, st, runner, zipPath(props, w.Group), envs[w.Group])
				// The build runs the runner group's code: it gets exactly
				// that group's grants.
				s.grant(p, runner)
				projects[st.Name] = p
				s.Projects[def.Name+"/"+st.Name] = p
			}
		}
		sm, err := StateMachineFromDefinition(stack, "Workflow"+pascal(def.Name), def, StateMachineOptions{
			Name:         machineName(id, def.Name),
			StepFunction: s.Functions[w.Group],
			Projects:     projects,
			Logs:         logGroup(stack, "Workflow"+pascal(def.Name)+"Logs"),
		})
		if err != nil {
			return nil, fmt.Errorf("stack %s: %w", id, err)
		}
		s.StateMachines[def.Name] = sm
		out(stack, "StateMachine"+pascal(def.Name)+"Arn", sm.StateMachineArn(), "ARN of the "+def.Name+" workflow's state machine")
	}

	ui, err := s.ui(site, props.UIAssetsDir)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", id, err)
	}
	s.UI = ui
	s.outputs()
	return s, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// restAPI defines the REST API of host: the platform API ("") is PRIVATE,
// reached through the region's execute-api endpoint (the ingress load
// balancer and the API's own host); a group's own host is a regional API.
func (s *RegionStack) restAPI(id, host string) awsapigateway.RestApi {
	cid, name, desc := "Api", id+"-api", "agentplane "+s.Name+": every platform route of the catalog, each to its group's Lambda function"
	rate, burst := apiRateLimit, apiBurstLimit
	props := &awsapigateway.RestApiProps{
		EndpointConfiguration: &awsapigateway.EndpointConfiguration{
			Types:        &[]awsapigateway.EndpointType{awsapigateway.EndpointType_PRIVATE},
			VpcEndpoints: &[]awsec2.IVpcEndpoint{s.Network.APIEndpoint},
		},
		Policy: onlyThroughEndpoint(s.Network.APIEndpoint),
	}
	if host != "" {
		cid, name, desc = "Api"+pascal(host), id+"-"+host, "agentplane "+s.Name+": the routes of host "+host
		rate, burst = hostRateLimit, hostBurstLimit
		props = &awsapigateway.RestApiProps{EndpointTypes: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL}}
	}
	props.RestApiName = jsii.String(name)
	props.Description = jsii.String(desc)
	// Bodies reach the functions as base64 and go back decoded, so
	// binary payloads survive the proxy.
	props.BinaryMediaTypes = jsii.Strings("*/*")
	props.CloudWatchRole = jsii.Bool(host == "")
	props.DeployOptions = &awsapigateway.StageOptions{
		StageName:            jsii.String(StageName),
		TracingEnabled:       jsii.Bool(true),
		MetricsEnabled:       jsii.Bool(true),
		LoggingLevel:         awsapigateway.MethodLoggingLevel_ERROR,
		ThrottlingRateLimit:  jsii.Number(float64(rate)),
		ThrottlingBurstLimit: jsii.Number(float64(burst)),
		DataTraceEnabled:     jsii.Bool(false),
		AccessLogDestination: awsapigateway.NewLogGroupLogDestination(logGroup(s.Stack, cid+"AccessLogs")),
		AccessLogFormat: awsapigateway.AccessLogFormat_JsonWithStandardFields(&awsapigateway.JsonWithStandardFieldProps{
			Caller: jsii.Bool(false), HttpMethod: jsii.Bool(true), Ip: jsii.Bool(true), Protocol: jsii.Bool(true),
			RequestTime: jsii.Bool(true), ResourcePath: jsii.Bool(true), ResponseLength: jsii.Bool(true),
			Status: jsii.Bool(true), User: jsii.Bool(false),
		}),
	}
	return awsapigateway.NewRestApi(s.Stack, jsii.String(cid), props)
}

// HostURL is the public URL of a host's API: the platform API's own host,
// or the execute-api URL of a group's host ("https://…/prod").
func (s *RegionStack) HostURL(host string) *string {
	if host == "" {
		return jsii.String(origin(s.Site.APIURL))
	}
	api := s.APIs[host]
	return awscdk.Fn_Join(jsii.String(""), jsii.Strings(
		"https://", *api.RestApiId(), ".execute-api.", *s.Stack.Region(), ".", *s.Stack.UrlSuffix(), "/"+StageName))
}

// environment is the configuration of a group's function
// (shared/compose/config.go): only the topics it publishes, the bucket
// when it uses blobs, the key when it handles secrets, only the state
// machines it starts; the hosted addresses and the region link for every
// function over the store; the operator token's digest for the sign-up
// group; and in the region that is not the billing home, the billing home's
// queue for the billing group. A group with its own host (the tool server)
// opens no store: it gets the platform APIs it calls
// (shared/compose/mcpgroup.FromEnv) and nothing of the region's data.
func (s *RegionStack) environment(g GroupPlan, props *RegionStackProps, signUp bool) map[string]*string {
	env := map[string]*string{
		"AGENTPLANE_MODE":        jsii.String("aws"),
		"AGENTPLANE_REGION_NAME": jsii.String(props.RegionName),
		"AGENTPLANE_LOG_LEVEL":   jsii.String("info"),
	}
	if !g.Store {
		env["AGENTPLANE_MCP_ENDPOINT"] = jsii.String(origin(s.Site.APIURL))
		env["AGENTPLANE_MCP_ALLOWED_ENDPOINTS"] = jsii.String(s.Published.PeerURL)
		return env
	}
	env["AGENTPLANE_TABLE"] = s.Table.TableName()
	env["AGENTPLANE_BASE_URL"] = jsii.String(origin(s.Site.APIURL))
	for k, v := range s.Published.Env() {
		env[k] = jsii.String(v)
	}
	env[regions.EnvLinkToken] = s.linkToken
	if g.Uses.Blobs {
		env["AGENTPLANE_BUCKET"] = s.Bucket.BucketName()
	}
	if len(g.TopicQueues) > 0 {
		topics := map[string]*string{}
		for t, c := range g.TopicQueues {
			topics[t] = s.Queues[c].QueueUrl()
		}
		env["AGENTPLANE_TOPICS"] = s.Stack.ToJsonString(topics, nil)
	}
	if g.Uses.Secrets {
		env["AGENTPLANE_KMS_KEY_ID"] = s.SecretsKey.KeyArn()
	}
	if len(g.Uses.StartsWorkflows) > 0 {
		machines := map[string]*string{}
		for _, wf := range g.Uses.StartsWorkflows {
			machines[wf] = s.machineARNs[wf]
		}
		env["AGENTPLANE_STATE_MACHINES"] = s.Stack.ToJsonString(machines, nil)
	}
	if signUp && props.OperatorTokenSHA256 != "" {
		env["AGENTPLANE_OPERATOR_TOKEN_SHA256"] = jsii.String(props.OperatorTokenSHA256)
	}
	if props.RegionName != string(regions.BillingHome) && s.Layout.Consumers[BillingTopic] == g.Name {
		h := props.Sites.Of(string(regions.BillingHome))
		env["AGENTPLANE_BILLING_QUEUE_URL"] = s.billingQueueURL(h, s.Layout.Consumers[BillingTopic])
		env["AGENTPLANE_BILLING_QUEUE_REGION"] = jsii.String(h.AWSRegion)
	}
	return env
}

// queue defines a consuming group's queue and its dead-letter queue; name
// is the queue's physical name ("" for a generated one).
func (s *RegionStack) queue(g GroupPlan, name string) {
	p := pascal(g.Name)
	dlq := awssqs.NewQueue(s.Stack, jsii.String("DeadLetters"+p), &awssqs.QueueProps{
		EnforceSSL:      jsii.Bool(true),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	s.DeadLetters[g.Name] = dlq
	var physical *string
	if name != "" {
		physical = jsii.String(name)
	}
	s.Queues[g.Name] = awssqs.NewQueue(s.Stack, jsii.String("Queue"+p), &awssqs.QueueProps{
		QueueName:         physical,
		EnforceSSL:        jsii.Bool(true),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(float64(g.VisibilitySeconds))),
		RetentionPeriod:   awscdk.Duration_Days(jsii.Number(4)),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(MaxReceives)},
	})
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

// function defines a group's Lambda function with its own role and log
// group; roleName is the role's physical name ("" for a generated one). A
// group that calls user endpoints runs in the VPC's private subnets, so its
// traffic leaves from the published egress addresses.
func (s *RegionStack) function(g GroupPlan, zip string, env map[string]*string, roleName string) awslambda.Function {
	id := "Fn" + pascal(g.Name)
	logs := logGroup(s.Stack, id+"Logs")
	var name *string
	if roleName != "" {
		name = jsii.String(roleName)
	}
	role := awsiam.NewRole(s.Stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		RoleName:    name,
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("agentplane function " + g.Name),
	})
	s.Roles[g.Name] = role
	// Only its own log group, instead of AWSLambdaBasicExecutionRole.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	desc := "agentplane " + g.Name + ": " + g.Description
	if len(desc) > 256 { // Lambda's limit
		desc = desc[:253] + "..."
	}
	props := &awslambda.FunctionProps{
		Description:   jsii.String(desc),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(zip), nil),
		MemorySize:    jsii.Number(memoryMB),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(float64(g.TimeoutSeconds))),
		Tracing:       awslambda.Tracing_ACTIVE,
		Environment:   &env,
		Role:          role,
		LogGroup:      logs,
		LoggingFormat: awslambda.LoggingFormat_JSON,
	}
	if g.Egress != "" {
		// Inline, instead of AWSLambdaVPCAccessExecutionRole: the role
		// keeps no managed policy.
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(ENIActions...), Resources: jsii.Strings("*"),
		}))
		props.Vpc = s.Network.VPC
		props.VpcSubnets = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}
		props.SecurityGroups = &[]awsec2.ISecurityGroup{s.Network.Egress}
	}
	return awslambda.NewFunction(s.Stack, jsii.String(id), props)
}

// stepProject is the CodeBuild project of a workflow step with AWSService
// "codebuild": it runs the step's Go code (the runner group's bootstrap, in
// its CodeBuild mode, from the group's deployment zip) and hands the step's new state back to the state machine
// as an exported variable.
func (s *RegionStack) stepProject(def workflow.Definition, st workflow.Step, runner GroupPlan, zip string, env map[string]*string) awscodebuild.Project {
	id := "Project" + pascal(def.Name) + pascal(st.Name)
	code := awss3assets.NewAsset(s.Stack, jsii.String(id+"Code"), &awss3assets.AssetProps{Path: jsii.String(zip)})
	vars := map[string]*awscodebuild.BuildEnvironmentVariable{}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == regions.EnvLinkToken {
			// CodeBuild reads the secret when a build starts: the token
			// is not written into the project's configuration.
			vars[k] = &awscodebuild.BuildEnvironmentVariable{
				Type: awscodebuild.BuildEnvironmentVariableType_SECRETS_MANAGER, Value: jsii.String(s.linkSecretName)}
			continue
		}
		vars[k] = &awscodebuild.BuildEnvironmentVariable{Value: env[k]}
	}
	logs := logGroup(s.Stack, id+"Logs")
	props := &awscodebuild.ProjectProps{
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
	}
	if runner.Egress != "" {
		// The runner's code reaches user endpoints here too: the same
		// private subnets and egress addresses as its function.
		props.Vpc = s.Network.VPC
		props.SubnetSelection = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}
		props.SecurityGroups = &[]awsec2.ISecurityGroup{s.Network.Egress}
	}
	return awscodebuild.NewProject(s.Stack, jsii.String(id), props)
}

// StateVariable is the exported CodeBuild variable that carries a step's
// new state back to the state machine.
const StateVariable = "AGENTPLANE_STATE_OUT"

// stepBuildSpec runs the runner group's binary (the source is its
// deployment zip) once for the step named in AGENTPLANE_STEP with the state in
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

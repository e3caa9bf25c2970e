// Findings of the AwsSolutions pack that agentplane accepts, each with the
// reason. A finding is acknowledged when its full id (rule and finding,
// e.g. "AwsSolutions-IAM5[Resource::*]") matches `finding` and the logical
// id of the resource it is on matches `resource`. Logical ids carry CDK's
// hash suffix, hence the patterns. Anything else fails the check.
'use strict';

const hash = '[0-9A-F]{8}';
const fnPolicy = new RegExp(`^Fn[A-Za-z0-9]+RoleDefaultPolicy${hash}$`);
const projectPolicy = new RegExp(`^Project[A-Za-z0-9]+RoleDefaultPolicy${hash}$`);
const machinePolicy = new RegExp(`^Workflow[A-Za-z0-9]+StateMachineRoleDefaultPolicy${hash}$`);
const dataPolicy = new RegExp(`^(Fn[A-Za-z0-9]+|Project[A-Za-z0-9]+)RoleDefaultPolicy${hash}$`);
// CDK's own deployment-time functions: the UI's BucketDeployment, the
// AwsCustomResource that reads the execute-api endpoint's addresses, the
// VPC's default-security-group lockdown.
const bucketDeployment = new RegExp(`^CustomCDKBucketDeployment[0-9A-F]{32}[0-9]+MiB(ServiceRole(DefaultPolicy)?)?${hash}$`);
const cdkProviderRole = new RegExp(`^(AWS679f53fac002430cb0da5b7982bd2287ServiceRole|CustomVpcRestrictDefaultSGCustomResourceProviderRole|${bucketDeployment.source.slice(1, -1)})(${hash})?$`);
const api = '(Api[A-Z][A-Za-z0-9]*|Api)';

module.exports = [
  {
    finding: /^AwsSolutions-APIG2$/,
    resource: new RegExp(`^${api}${hash}$`),
    reason: 'Requests are validated by the functions, which answer invalid input in the interface\'s FastAPI shapes (422 with loc paths); an API Gateway request validator would answer in a different shape.',
  },
  {
    finding: /^AwsSolutions-APIG3$/,
    resource: new RegExp(`^Api[A-Z][A-Za-z0-9]*DeploymentStage[a-z]+${hash}$`),
    reason: 'A host API of its own (the MCP tool server) holds no data and calls the platform API with each caller\'s own key, where the platform\'s web ACL (the rate-limit table) and the in-app limiter count every call; its stage throttle (100 requests/s, burst 200) bounds the function. The platform API\'s stage has its web ACL (asserted by the infra tests).',
  },
  {
    finding: /^AwsSolutions-(APIG4|COG4)$/,
    resource: /^Api.*(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|ANY)[0-9A-F]{8}$/,
    reason: 'The interface defines its own credentials (X-Api-Key with X-Tenant-Id, bearer organization keys, SCIM tokens, signed webhooks, public health and SSO sign-in); the functions authenticate every request, so the methods use no API Gateway authorizer.',
  },
  {
    finding: /^AwsSolutions-IAM4\[Policy::arn:<AWS::Partition>:iam::aws:policy\/service-role\/AmazonAPIGatewayPushToCloudWatchLogs\]$/,
    resource: new RegExp(`^${api}CloudWatchRole${hash}$`),
    reason: 'API Gateway\'s account-level CloudWatch role, needed for access and execution logs; AWS publishes this managed policy for exactly that role.',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::\*\]$/,
    resource: fnPolicy,
    reason: 'X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) supports no resource-level permissions; nor do the network-interface actions Lambda needs to attach the functions that run in the VPC (build, mcp) to their subnets (ec2:CreateNetworkInterface and related, inline instead of AWSLambdaVPCAccessExecutionRole; the infra tests check which functions have them).',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::\*\]$/,
    resource: machinePolicy,
    reason: 'Step Functions log delivery (logs:CreateLogDelivery and related) and X-Ray tracing support no resource-level permissions.',
  },
  {
    finding: new RegExp(`^AwsSolutions-IAM5\\[Resource::<Blobs${hash}\\.Arn>/\\*\\]$`),
    resource: dataPolicy,
    reason: 'Objects of the blob bucket are keyed by deployment and revision ids created at run time; the grant covers only this bucket\'s objects and only get, put, delete and abort.',
  },
  {
    finding: new RegExp(`^AwsSolutions-IAM5\\[Resource::<Fn[A-Za-z0-9]+${hash}\\.Arn>:\\*\\]$`),
    resource: machinePolicy,
    reason: 'Invoking the function that runs the workflow\'s steps by version or alias (the CDK LambdaInvoke grant); only that one function (the infra tests check it).',
  },
  {
    finding: /^AwsSolutions-IAM5\[Action::(kms:GenerateDataKey\*|kms:ReEncrypt\*)\]$/,
    resource: projectPolicy,
    reason: 'CodeBuild encrypts its artifacts and logs with the stack\'s KMS key; the grant covers only that key.',
  },
  {
    finding: /^AwsSolutions-IAM5\[Action::(s3:GetObject\*|s3:GetBucket\*|s3:List\*)\]$/,
    resource: projectPolicy,
    reason: 'CodeBuild reads its source (the runner group\'s deployment zip) from the CDK assets bucket; read-only and only that bucket.',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::arn:aws:codebuild:[a-z0-9-]+:<AWS::AccountId>:report-group\/<Project[A-Za-z0-9]+[0-9A-F]{8}>-\*\]$/,
    resource: projectPolicy,
    reason: 'CodeBuild\'s default grant for the project\'s own report groups (named after the project).',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::arn:aws:logs:[a-z0-9-]+:<AWS::AccountId>:log-group:\/aws\/codebuild\/<Project[A-Za-z0-9]+[0-9A-F]{8}>:\*\]$/,
    resource: projectPolicy,
    reason: 'CodeBuild\'s default grant for the project\'s own log streams.',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::\*\]$/,
    resource: new RegExp(`^Project[A-Za-z0-9]+PolicyDocument${hash}$`),
    reason: 'CodeBuild in the VPC (the build step fetches user repositories, so it leaves through the published NAT addresses) creates and describes its network interfaces; EC2 scopes none of these actions to resources.',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface\/\*\]$/,
    resource: projectPolicy,
    reason: 'CodeBuild in the VPC hands its network interfaces to the service (ec2:CreateNetworkInterfacePermission), conditioned on the private subnets and on codebuild.amazonaws.com; the interfaces do not exist before the build.',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::\*\]$/,
    resource: new RegExp(`^ApiEndpointAddressesCustomResourcePolicy${hash}$`),
    reason: 'Reading the execute-api endpoint\'s private addresses (the ingress load balancer\'s targets) at deployment: ec2:DescribeNetworkInterfaces, read-only, supports no resource-level permissions.',
  },
  {
    finding: /^AwsSolutions-IAM4\[Policy::arn:<AWS::Partition>:iam::aws:policy\/service-role\/AWSLambdaBasicExecutionRole\]$/,
    resource: cdkProviderRole,
    reason: 'Deployment-time functions of CDK itself (the UI file deployment, the endpoint address lookup, the default security group lockdown): CDK gives them the basic execution role (their own logs) and no way to replace it.',
  },
  {
    finding: /^AwsSolutions-L1$/,
    resource: bucketDeployment,
    reason: 'The UI file deployment\'s runtime is chosen by CDK\'s BucketDeployment (with its AWS CLI layer), not by this stack; it runs only during deployments.',
  },
  {
    finding: /^AwsSolutions-IAM5\[(Action::(s3:GetBucket\*|s3:GetObject\*|s3:List\*|s3:Abort\*|s3:DeleteObject\*)|Resource::<UiFiles[0-9A-F]{8}\.Arn>\/\*|Resource::arn:aws:s3:::cdk-[a-z0-9]+-assets-<AWS::AccountId>-[a-z0-9-]+\/\*|Resource::\*)\]$/,
    resource: bucketDeployment,
    reason: 'The UI file deployment copies the built files from the CDK assets bucket into the UI bucket, removes stale ones, and invalidates the distribution (cloudfront:CreateInvalidation supports no resource-level permission); CDK\'s BucketDeployment grant, limited to those two buckets.',
  },
  {
    finding: /^AwsSolutions-ELB2$/,
    resource: new RegExp(`^Ingress${hash}$`),
    reason: 'The ingress load balancer passes TCP through to the API (TLS ends at API Gateway, with the API host\'s certificate): Network Load Balancer access logs exist only for TLS listeners. Requests are logged by the API stage\'s access log, connections by the VPC flow logs.',
  },
  {
    finding: /^AwsSolutions-EC23$/,
    resource: new RegExp(`^IngressLoadBalancer${hash}$`),
    reason: 'The public API\'s static ingress: HTTPS (443) from anywhere is its purpose. Behind it the execute-api endpoint admits only this group, the web ACL applies the rate-limit table and the functions authenticate every request.',
  },
  {
    finding: /^AwsSolutions-CFR1$/,
    resource: new RegExp(`^Ui${hash}$`),
    reason: 'The web UI is for users anywhere; its files are public static assets, and the data it shows comes from the API, which keeps each organization in its home region.',
  },
  {
    finding: /^AwsSolutions-CFR2$/,
    resource: new RegExp(`^Ui${hash}$`),
    reason: 'The distribution serves static files only (no data, no credentials); a CloudFront web ACL must live in us-east-1, which the EU stack cannot create. The API the UI calls has its regional web ACL.',
  },
  {
    finding: /^AwsSolutions-CFR4$/,
    resource: new RegExp(`^Ui${hash}$`),
    reason: 'Without <r>AppCertificateArn the distribution serves its own cloudfront.net name, whose default certificate fixes the minimum TLS version; with a certificate the stack sets TLSv1.2_2021 (the infra tests check both).',
  },
  {
    finding: /^AwsSolutions-SMG4$/,
    resource: new RegExp(`^RegionLinkToken${hash}$`),
    reason: 'The region link token is one secret shared by both regions\' functions, which read it at deployment (AGENTPLANE_REGION_LINK_TOKEN): rotating it means redeploying both stacks together (infra/README.md), which a rotation schedule could not do.',
  },
];

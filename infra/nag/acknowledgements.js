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

module.exports = [
  {
    finding: /^AwsSolutions-APIG2$/,
    resource: new RegExp(`^Api${hash}$`),
    reason: 'Requests are validated by the functions, which answer invalid input in the interface\'s FastAPI shapes (422 with loc paths); an API Gateway request validator would answer in a different shape.',
  },
  {
    finding: /^AwsSolutions-APIG3$/,
    resource: new RegExp(`^ApiDeploymentStage[a-z]+${hash}$`),
    reason: 'No WAF web ACL in the stack: the stage throttles every method (1000 requests/s, burst 2000) and the functions authenticate every request; a regional web ACL is billed per request and rule, so operators associate one with the stage when their traffic calls for it.',
  },
  {
    finding: /^AwsSolutions-(APIG4|COG4)$/,
    resource: /^Api.*(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)[0-9A-F]{8}$/,
    reason: 'The interface defines its own credentials (X-Api-Key with X-Tenant-Id, bearer organization keys, SCIM tokens, signed webhooks, public health and SSO sign-in); the functions authenticate every request, so the methods use no API Gateway authorizer.',
  },
  {
    finding: /^AwsSolutions-IAM4\[Policy::arn:<AWS::Partition>:iam::aws:policy\/service-role\/AmazonAPIGatewayPushToCloudWatchLogs\]$/,
    resource: new RegExp(`^ApiCloudWatchRole${hash}$`),
    reason: 'API Gateway\'s account-level CloudWatch role, needed for access and execution logs; AWS publishes this managed policy for exactly that role.',
  },
  {
    finding: /^AwsSolutions-IAM5\[Resource::\*\]$/,
    resource: fnPolicy,
    reason: 'X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) supports no resource-level permissions.',
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
];

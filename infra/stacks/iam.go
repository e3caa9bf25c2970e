package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// The actions a grant gives, by what a group declares (compose.Uses). The
// adapters call no others: dynamostore uses GetItem, PutItem, UpdateItem,
// DeleteItem, Query and TransactWriteItems (which IAM authorizes through
// the per-item actions, ConditionCheckItem included); the S3 adapter gets,
// heads, puts (multipart included), deletes and lists; the KMS keeper
// generates data keys and decrypts them; sfnstart starts executions;
// sqsqueue sends.
var (
	TableActions    = []string{"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}
	IndexActions    = []string{"dynamodb:Query"}
	ObjectActions   = []string{"s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"}
	BucketActions   = []string{"s3:ListBucket"}
	SecretActions   = []string{"kms:Decrypt", "kms:GenerateDataKey"}
	WorkflowActions = []string{"states:StartExecution"}
	PublishActions  = []string{"sqs:SendMessage"}
)

// grant gives p (a group's function, or a CodeBuild project running the
// group's code) exactly what g declares: nothing for a group that opens no
// store; the table's items for every other group (the rate limiter's
// counters are items too); Query on the indexes it names; the bucket only with Uses.Blobs;
// the secrets key only with Uses.Secrets; StartExecution on the state
// machines it starts; SendMessage on the queues of the topics it
// publishes. Receiving from its own queue is the event source mapping's
// grant.
func (s *RegionStack) grant(p awsiam.IGrantable, g GroupPlan) {
	if !g.Store {
		// A client of the platform API: no table, bucket, key, queue or
		// state machine (NewLayout refuses such a group declaring any).
		return
	}
	add := func(actions []string, resources ...*string) {
		if len(resources) == 0 {
			return
		}
		p.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(actions...),
			Resources: &resources,
		}))
	}
	add(TableActions, s.Table.TableArn())
	var indexes []*string
	for _, ix := range g.Uses.Indexes {
		indexes = append(indexes, jsii.String(*s.Table.TableArn()+"/index/"+ix))
	}
	add(IndexActions, indexes...)
	if g.Uses.Blobs {
		add(ObjectActions, s.Bucket.ArnForObjects(jsii.String("*")))
		add(BucketActions, s.Bucket.BucketArn())
	}
	if g.Uses.Secrets {
		add(SecretActions, s.SecretsKey.KeyArn())
	}
	var machines []*string
	for _, wf := range g.Uses.StartsWorkflows {
		machines = append(machines, s.machineARNs[wf])
	}
	add(WorkflowActions, machines...)
	var queues []*string
	for _, c := range g.PublishesTo() {
		queues = append(queues, s.Queues[c].QueueArn())
	}
	add(PublishActions, queues...)
}

package stacks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/shared/domains/regions"
)

// What ties the two regions together (docs/regions.md): the region link's
// token, and the billing home's queue, to which the other region's billing
// function forwards usage events. Two stacks in two regions cannot
// reference each other's resources, so both sides derive the shared names
// from the sites: the secret's name, the billing queue's name and the
// forwarding role's name. The billing home's stack deploys first (the
// other region's stack depends on it: it creates the secret's replica).

// billingQueueName is the billing home's billing queue: named after its
// stack, so the other region knows its URL and ARN.
func billingQueueName(stackID, group string) string { return stackID + "-" + group }

// billingRoleName is the role of the other region's billing function,
// which the billing home's queue policy names (IAM names are global to
// the account: the stack id keeps it unique).
func billingRoleName(stackID, group string) string {
	name := stackID + "-fn-" + group
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// billingQueueURL is the URL of home's billing queue (the same account).
func (s *RegionStack) billingQueueURL(home Site, group string) *string {
	return awscdk.Fn_Join(jsii.String(""), jsii.Strings(
		"https://sqs.", home.AWSRegion, ".", *s.Stack.UrlSuffix(), "/", *s.Stack.Account(), "/", billingQueueName(home.StackID, group)))
}

// billingQueueARN is the ARN of home's billing queue.
func (s *RegionStack) billingQueueARN(home Site, group string) *string {
	return s.Stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("sqs"), Region: jsii.String(home.AWSRegion),
		Resource: jsii.String(billingQueueName(home.StackID, group)),
	})
}

// link defines, in the billing home, the region link's secret (64 random
// letters and digits, replicated to the other region), and gives every
// function over the store its value (a dynamic reference, resolved by
// CloudFormation at deployment).
func (s *RegionStack) link(props *RegionStackProps, home bool) {
	name := props.LinkSecretName
	if name == "" {
		name = DefaultLinkSecretName
	}
	s.linkSecretName = name
	if !home {
		// The replica the billing home's stack made, by its name.
		s.linkToken = awscdk.SecretValue_SecretsManager(jsii.String(name), nil).UnsafeUnwrap()
		return
	}
	other := props.Sites.Of(otherName(props.RegionName))
	s.LinkSecret = awssecretsmanager.NewSecret(s.Stack, jsii.String("RegionLinkToken"), &awssecretsmanager.SecretProps{
		SecretName:  jsii.String(name),
		Description: jsii.String("agentplane: the region link's shared token (AGENTPLANE_REGION_LINK_TOKEN), the same in both regions"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:     jsii.Number(64),
			ExcludePunctuation: jsii.Bool(true),
			IncludeSpace:       jsii.Bool(false),
		},
		ReplicaRegions: &[]*awssecretsmanager.ReplicaRegion{{Region: jsii.String(other.AWSRegion)}},
		RemovalPolicy:  awscdk.RemovalPolicy_RETAIN,
	})
	s.linkToken = s.LinkSecret.SecretValue().UnsafeUnwrap()
}

func otherName(n string) string {
	if n == "eu" {
		return "us"
	}
	return "eu"
}

// billingLink connects the billing group across the regions: in the
// billing home, its queue's policy lets the other region's billing role
// send; in the other region, that role may send to the home's queue.
func (s *RegionStack) billingLink(props *RegionStackProps, group string, home bool) {
	if home {
		other := props.Sites.Of(otherName(props.RegionName))
		role := s.Stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("iam"), Region: jsii.String(""), Resource: jsii.String("role"),
			ResourceName: jsii.String(billingRoleName(other.StackID, group)),
		})
		// The account as principal, narrowed to that role by name: a
		// queue policy naming a role that does not exist yet (the other
		// region deploys second) would be refused.
		s.Queues[group].AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("ForwardedUsageFrom" + strings.ToUpper(other.Name)),
			Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
			Actions:    jsii.Strings(PublishActions...),
			Resources:  &[]*string{s.Queues[group].QueueArn()},
			Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:PrincipalArn": role}},
		}))
		return
	}
	h := props.Sites.Of(string(regions.BillingHome))
	s.Roles[group].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(PublishActions...),
		Resources: &[]*string{s.billingQueueARN(h, group)},
	}))
}

// outputs are the stack's published values: this region's hosted
// addresses, its egress and ingress addresses, the tool server's and the
// UI's URLs, and the names an operator needs.
func (s *RegionStack) outputs() {
	stack := s.Stack
	a := s.Published.Hosted.Of(s.Published.Region)
	out(stack, "ApiUrl", jsii.String(a.APIURL), "the platform API (its host must resolve to IngressIps)")
	out(stack, "AppUrl", jsii.String(a.AppURL), "the web app's published URL")
	out(stack, "BeaconUrl", jsii.String(a.BeaconURL), "the beacon host")
	out(stack, "EgressIps", awscdk.Fn_Join(jsii.String(","), &s.Network.EgressIPs), "NAT addresses: all traffic to user endpoints comes from these")
	out(stack, "IngressIps", awscdk.Fn_Join(jsii.String(","), &s.Network.IngressIPs), "static ingress addresses of the API (the load balancer's Elastic IPs)")
	out(stack, "IngressDnsName", s.Network.Ingress.LoadBalancerDnsName(), "the load balancer's DNS name (an alias target for the API host)")
	out(stack, "HostedAddresses", jsonText(s.Published.Document()), "both regions' addresses as GET /api/v1/regions publishes them")
	for _, host := range s.Layout.Hosts() {
		if host == "" {
			continue
		}
		url := s.HostURL(host)
		for _, r := range s.Layout.Routes(host) {
			if r.Method == "POST" {
				// The tool server's URL is its MCP endpoint ({mcp_url}).
				url = awscdk.Fn_Join(jsii.String(""), &[]*string{url, jsii.String(r.Path)})
				break
			}
		}
		out(stack, pascal(host)+"Url", url, fmt.Sprintf("the %s API's endpoint", host))
	}
	out(stack, "UiUrl", s.UI.URL, "the web UI (CloudFront)")
	out(stack, "ApiCertificateArn", s.apiCertificateARN(), "the API host's certificate (validate it by DNS when the stack requested it)")
	out(stack, "TableName", s.Table.TableName(), "DynamoDB table")
	out(stack, "BucketName", s.Bucket.BucketName(), "S3 bucket for blobs")
	out(stack, "SecretsKeyArn", s.SecretsKey.KeyArn(), "KMS key for secrets")
	out(stack, "WebAclArn", s.WebACL.AttrArn(), "the platform API's web ACL (the rate-limit table)")
	for _, g := range s.Layout.Groups {
		if g.HasQueue() {
			out(stack, "Queue"+pascal(g.Name)+"Url", s.Queues[g.Name].QueueUrl(), "queue of group "+g.Name)
		}
	}
}

func (s *RegionStack) apiCertificateARN() *string {
	if s.Domain.Certificate != nil {
		return s.Domain.Certificate.CertificateArn()
	}
	return jsii.String(s.Site.APICertificateARN)
}

// jsonText is v's JSON. Its only deploy-time values are allocated
// addresses (dotted IPv4, nothing JSON would escape), so the tokens stay in
// the text and CloudFormation joins them, without CDK's JSON-stringify
// custom resource.
func jsonText(v any) *string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return jsii.String(string(raw))
}

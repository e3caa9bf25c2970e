package stacks

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2targets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/jsii-runtime-go"
)

// The network edge of a region (docs: infra/README.md, "Network"):
//
//   - egress: a VPC whose private subnets leave through one NAT gateway per
//     zone, with the Elastic IPs of context (<r>EgressEips), so what the
//     region publishes as its egress addresses is what user endpoints see;
//     only the functions that call user endpoints run there (Layout
//     egress groups), with gateway endpoints for DynamoDB and S3 so their
//     data traffic never crosses the NATs;
//   - ingress: a Network Load Balancer on the Elastic IPs of context
//     (<r>IngressEips), passing TCP 443 through to the execute-api
//     interface endpoint, behind which the platform API is a PRIVATE REST
//     API with a private custom domain name (the API's public host): the
//     API has no other way in, and its host resolves to the published
//     ingress addresses.

// HTTPSPort is the only port of the ingress.
const HTTPSPort = 443

// ENIActions are what Lambda needs in a function's role to attach it to
// the VPC (the actions of AWSLambdaVPCAccessExecutionRole, inline so the
// role keeps no managed policy). EC2 gives them no resource-level scope.
var ENIActions = []string{"ec2:AssignPrivateIpAddresses", "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface",
	"ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets", "ec2:UnassignPrivateIpAddresses"}

// Network is what the region stack builds at its edge.
type Network struct {
	VPC awsec2.Vpc
	// Egress is the security group of the functions in the VPC: no
	// inbound rule, any outbound.
	Egress awsec2.SecurityGroup
	// NATs are the NAT gateways, one per zone.
	NATs []awsec2.CfnNatGateway
	// EgressIPs and IngressIPs are the addresses (context values, or the
	// allocated Elastic IPs' attributes).
	EgressIPs, IngressIPs []*string
	// AllocatedEIPs are the Elastic IPs the stack allocated itself (none
	// when context gives them all).
	AllocatedEIPs []awsec2.CfnEIP
	// APIEndpoint is the execute-api interface endpoint.
	APIEndpoint awsec2.InterfaceVpcEndpoint
	// EndpointAddresses looks up the endpoint's private addresses (the
	// load balancer's targets).
	EndpointAddresses customresources.AwsCustomResource
	Ingress           awselasticloadbalancingv2.NetworkLoadBalancer
	IngressTargets    awselasticloadbalancingv2.NetworkTargetGroup
	IngressGroup      awsec2.SecurityGroup
	EndpointGroup     awsec2.SecurityGroup
}

// network defines the VPC, the NAT gateways, the endpoints and the ingress
// load balancer of site.
func (s *RegionStack) network(site Site) *Network {
	n := &Network{}
	stack := s.Stack
	eip := func(id string) awsec2.CfnEIP {
		e := awsec2.NewCfnEIP(stack, jsii.String(id), &awsec2.CfnEIPProps{Domain: jsii.String("vpc")})
		// Addresses are published and allow-listed by users: never
		// released by a stack update or deletion.
		e.ApplyRemovalPolicy(awscdk.RemovalPolicy_RETAIN, nil)
		n.AllocatedEIPs = append(n.AllocatedEIPs, e)
		return e
	}
	azs := len(site.AZs)
	var primary []*string
	secondary := make([][]*string, azs)
	if len(site.Egress) == 0 {
		for i := range azs {
			e := eip(fmt.Sprintf("NatEip%d", i+1))
			primary = append(primary, e.AttrAllocationId())
			n.EgressIPs = append(n.EgressIPs, e.AttrPublicIp())
		}
	} else {
		for i, e := range site.Egress {
			if i < azs {
				primary = append(primary, jsii.String(e.AllocationID))
			} else {
				secondary[i%azs] = append(secondary[i%azs], jsii.String(e.AllocationID))
			}
			n.EgressIPs = append(n.EgressIPs, jsii.String(e.IP))
		}
	}

	private := &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}
	n.VPC = awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{
		IpAddresses:       awsec2.IpAddresses_Cidr(jsii.String(site.CIDR)),
		AvailabilityZones: jsii.Strings(site.AZs...),
		NatGateways:       jsii.Number(float64(azs)),
		NatGatewayProvider: awsec2.NatProvider_Gateway(&awsec2.NatGatewayProps{
			EipAllocationIds: &primary,
		}),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{
			{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24)},
			{Name: jsii.String("private"), SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS, CidrMask: jsii.Number(20)},
		},
		GatewayEndpoints: &map[string]*awsec2.GatewayVpcEndpointOptions{
			"DynamoDb": {Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(), Subnets: &[]*awsec2.SubnetSelection{private}},
			"S3":       {Service: awsec2.GatewayVpcEndpointAwsService_S3(), Subnets: &[]*awsec2.SubnetSelection{private}},
		},
		FlowLogs: &map[string]*awsec2.FlowLogOptions{
			"All": {
				Destination: awsec2.FlowLogDestination_ToS3(s.LogBucket, jsii.String("vpc-flow-logs/"), nil),
				TrafficType: awsec2.FlowLogTrafficType_ALL,
			},
		},
	})
	awscdk.Validations_Of(n.VPC).Acknowledge(&awscdk.Acknowledgment{
		Id: jsii.String("CloudFormation-Validate::W3010"),
		Reason: jsii.String("the zones come from context (<r>Azs): the NAT gateways and the load balancer's Elastic IPs are per zone, " +
			"and a lookup would need credentials at synthesis"),
	})
	for i, sub := range *n.VPC.PublicSubnets() {
		nat, ok := sub.Node().TryFindChild(jsii.String("NATGateway")).(awsec2.CfnNatGateway)
		if !ok {
			panic("stacks: the VPC's public subnet has no NAT gateway")
		}
		if len(secondary[i]) > 0 {
			nat.SetSecondaryAllocationIds(&secondary[i])
		}
		n.NATs = append(n.NATs, nat)
	}
	n.Egress = awsec2.NewSecurityGroup(stack, jsii.String("FunctionEgress"), &awsec2.SecurityGroupProps{
		Vpc:              n.VPC,
		Description:      jsii.String("agentplane functions that call user endpoints: outbound only, through the NAT gateways"),
		AllowAllOutbound: jsii.Bool(true),
	})

	// Ingress: load balancer → execute-api endpoint → private API.
	n.IngressGroup = awsec2.NewSecurityGroup(stack, jsii.String("IngressLoadBalancer"), &awsec2.SecurityGroupProps{
		Vpc:              n.VPC,
		Description:      jsii.String("agentplane API ingress: HTTPS from anywhere"),
		AllowAllOutbound: jsii.Bool(false),
	})
	n.IngressGroup.AddIngressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(HTTPSPort)), jsii.String("HTTPS clients of the public API"), nil)
	n.EndpointGroup = awsec2.NewSecurityGroup(stack, jsii.String("ApiEndpointGroup"), &awsec2.SecurityGroupProps{
		Vpc:              n.VPC,
		Description:      jsii.String("agentplane execute-api endpoint: HTTPS from the ingress load balancer only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	n.EndpointGroup.AddIngressRule(n.IngressGroup, awsec2.Port_Tcp(jsii.Number(HTTPSPort)), jsii.String("the ingress load balancer"), nil)
	n.IngressGroup.AddEgressRule(n.EndpointGroup, awsec2.Port_Tcp(jsii.Number(HTTPSPort)), jsii.String("the execute-api endpoint"), nil)
	n.APIEndpoint = n.VPC.AddInterfaceEndpoint(jsii.String("ExecuteApi"), &awsec2.InterfaceVpcEndpointOptions{
		Service: awsec2.InterfaceVpcEndpointAwsService_APIGATEWAY(),
		// Off: with private DNS, every execute-api name resolved in the
		// VPC (the tool server's own public API, for one) would go to
		// this endpoint, which serves private APIs only.
		PrivateDnsEnabled: jsii.Bool(false),
		Subnets:           private,
		SecurityGroups:    &[]awsec2.ISecurityGroup{n.EndpointGroup},
		Open:              jsii.Bool(false),
	})

	// The endpoint's addresses are known only once it exists: one lookup
	// of its network interfaces (one per zone), again when it changes.
	// The ids one by one (a string each): a list value would need CDK's
	// JSON-stringify custom resource.
	var enis []*string
	for i := range azs {
		enis = append(enis, awscdk.Fn_Select(jsii.Number(float64(i)), n.APIEndpoint.VpcEndpointNetworkInterfaceIds()))
	}
	call := &customresources.AwsSdkCall{
		Service: jsii.String("EC2"), Action: jsii.String("describeNetworkInterfaces"),
		Parameters:         map[string]any{"NetworkInterfaceIds": enis},
		PhysicalResourceId: customresources.PhysicalResourceId_Of(n.APIEndpoint.VpcEndpointId()),
	}
	var paths []*string
	for i := range azs {
		paths = append(paths, jsii.String(fmt.Sprintf("NetworkInterfaces.%d.PrivateIpAddress", i)))
	}
	call.OutputPaths = &paths
	n.EndpointAddresses = customresources.NewAwsCustomResource(stack, jsii.String("ApiEndpointAddresses"), &customresources.AwsCustomResourceProps{
		OnCreate: call,
		OnUpdate: call,
		Policy: customresources.AwsCustomResourcePolicy_FromStatements(&[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings("ec2:DescribeNetworkInterfaces"),
				Resources: jsii.Strings("*"),
			}),
		}),
		InstallLatestAwsSdk: jsii.Bool(false),
		LogGroup:            logGroup(stack, "ApiEndpointAddressesLogs"),
	})

	var mappings []*awselasticloadbalancingv2.SubnetMapping
	for i, sub := range *n.VPC.PublicSubnets() {
		var alloc *string
		if len(site.Ingress) == 0 {
			e := eip(fmt.Sprintf("IngressEip%d", i+1))
			alloc = e.AttrAllocationId()
			n.IngressIPs = append(n.IngressIPs, e.AttrPublicIp())
		} else {
			alloc = jsii.String(site.Ingress[i].AllocationID)
			n.IngressIPs = append(n.IngressIPs, jsii.String(site.Ingress[i].IP))
		}
		mappings = append(mappings, &awselasticloadbalancingv2.SubnetMapping{Subnet: sub, AllocationId: alloc})
	}
	n.Ingress = awselasticloadbalancingv2.NewNetworkLoadBalancer(stack, jsii.String("Ingress"), &awselasticloadbalancingv2.NetworkLoadBalancerProps{
		Vpc:              n.VPC,
		InternetFacing:   jsii.Bool(true),
		SubnetMappings:   &mappings,
		SecurityGroups:   &[]awsec2.ISecurityGroup{n.IngressGroup},
		CrossZoneEnabled: jsii.Bool(true),
	})
	var targets []awselasticloadbalancingv2.INetworkLoadBalancerTarget
	for _, p := range paths {
		targets = append(targets, newIPTarget(n.EndpointAddresses.GetResponseField(p)))
	}
	n.IngressTargets = awselasticloadbalancingv2.NewNetworkTargetGroup(stack, jsii.String("ApiEndpointTargets"), &awselasticloadbalancingv2.NetworkTargetGroupProps{
		Vpc:        n.VPC,
		Port:       jsii.Number(HTTPSPort),
		Protocol:   awselasticloadbalancingv2.Protocol_TCP,
		TargetType: awselasticloadbalancingv2.TargetType_IP,
		Targets:    &targets,
		// The API (its WAF rules, API Gateway's sourceIp, the rate
		// limiter) must see each client's own address, not the load
		// balancer's: without it every caller would share one IP identity.
		PreserveClientIp: jsii.Bool(true),
		HealthCheck: &awselasticloadbalancingv2.HealthCheck{
			Protocol: awselasticloadbalancingv2.Protocol_TCP,
		},
	})
	n.Ingress.AddListener(jsii.String("Https"), &awselasticloadbalancingv2.BaseNetworkListenerProps{
		Port:                jsii.Number(HTTPSPort),
		Protocol:            awselasticloadbalancingv2.Protocol_TCP,
		DefaultTargetGroups: &[]awselasticloadbalancingv2.INetworkTargetGroup{n.IngressTargets},
	})
	return n
}

// ipTarget registers an address (a token here) in an IP target group.
func newIPTarget(ip *string) awselasticloadbalancingv2.INetworkLoadBalancerTarget {
	return awselasticloadbalancingv2targets.NewIpTarget(ip, jsii.Number(HTTPSPort), nil)
}

// PrivateDomain is the platform API's public host, served by the private
// API through the execute-api endpoint.
type PrivateDomain struct {
	Domain      awsapigateway.CfnDomainNameV2
	Mapping     awsapigateway.CfnBasePathMappingV2
	Association awsapigateway.CfnDomainNameAccessAssociation
	// Certificate is the stack's own certificate (nil when context names
	// one).
	Certificate awscertificatemanager.Certificate
}

// onlyThroughEndpoint is the resource policy of the private API and of its
// domain name: invocations through the region's execute-api endpoint only.
func onlyThroughEndpoint(ep awsec2.InterfaceVpcEndpoint) awsiam.PolicyDocument {
	return awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect:     awsiam.Effect_ALLOW,
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("execute-api:Invoke"),
			Resources:  jsii.Strings("execute-api:/*"),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect:     awsiam.Effect_DENY,
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("execute-api:Invoke"),
			Resources:  jsii.Strings("execute-api:/*"),
			Conditions: &map[string]any{"StringNotEquals": map[string]any{"aws:SourceVpce": ep.VpcEndpointId()}},
		}),
	}})
}

// privateDomain gives the private API the site's API host through the
// endpoint: the domain name (TLS 1.2), its mapping of the root to the
// stage, and the endpoint's access association.
func (s *RegionStack) privateDomain(site Site, api awsapigateway.RestApi, ep awsec2.InterfaceVpcEndpoint) *PrivateDomain {
	host, _ := hostOf(site.APIURL)
	d := &PrivateDomain{}
	cert := jsii.String(site.APICertificateARN)
	if site.APICertificateARN == "" {
		d.Certificate = awscertificatemanager.NewCertificate(s.Stack, jsii.String("ApiCertificate"), &awscertificatemanager.CertificateProps{
			DomainName: jsii.String(host),
			Validation: awscertificatemanager.CertificateValidation_FromDns(nil),
		})
		cert = d.Certificate.CertificateArn()
	}
	d.Domain = awsapigateway.NewCfnDomainNameV2(s.Stack, jsii.String("ApiDomain"), &awsapigateway.CfnDomainNameV2Props{
		DomainName:            jsii.String(host),
		CertificateArn:        cert,
		EndpointConfiguration: &awsapigateway.CfnDomainNameV2_EndpointConfigurationProperty{Types: jsii.Strings("PRIVATE")},
		SecurityPolicy:        jsii.String("TLS_1_2"),
		Policy:                onlyThroughEndpoint(ep),
	})
	d.Mapping = awsapigateway.NewCfnBasePathMappingV2(s.Stack, jsii.String("ApiDomainMapping"), &awsapigateway.CfnBasePathMappingV2Props{
		DomainNameArn: d.Domain.AttrDomainNameArn(),
		RestApiId:     api.RestApiId(),
		Stage:         api.DeploymentStage().StageName(),
	})
	d.Association = awsapigateway.NewCfnDomainNameAccessAssociation(s.Stack, jsii.String("ApiDomainAccess"), &awsapigateway.CfnDomainNameAccessAssociationProps{
		AccessAssociationSource:     ep.VpcEndpointId(),
		AccessAssociationSourceType: jsii.String("VPCE"),
		DomainNameArn:               d.Domain.AttrDomainNameArn(),
	})
	return d
}

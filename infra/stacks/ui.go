package stacks

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/jsii-runtime-go"
)

// The web UI of a region: static files in a private bucket, served by
// CloudFront through origin access control, HTTPS only, with security
// headers; the UI finds its region's API in UIConfigPath, which the
// deployment writes next to the files (the contract of the ui branch's
// shared/domains/ui: {"api_base_url": "<API URL>"}).

// UIConfigPath is the file that names the API to the UI.
const UIConfigPath = "ui/config.json"

// UIConfig is that file's content for an API URL.
func UIConfig(apiURL string) map[string]any { return map[string]any{"api_base_url": origin(apiURL)} }

// UIContentSecurityPolicy keeps the page to its own files and its region's
// API (what shared/domains/ui serves locally, with the API's origin
// added).
func UIContentSecurityPolicy(apiURL string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' " + origin(apiURL) +
		"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// UI is what the stack builds for the web UI.
type UI struct {
	Bucket       awss3.Bucket
	LogBucket    awss3.Bucket
	Distribution awscloudfront.Distribution
	Headers      awscloudfront.ResponseHeadersPolicy
	Deployment   awss3deployment.BucketDeployment
	// URL is the distribution's own https URL.
	URL *string
}

// ui defines the bucket, the distribution and the deployment of the files
// of assets ("" deploys only UIConfigPath) for site.
func (s *RegionStack) ui(site Site, assets string) (*UI, error) {
	u := &UI{}
	stack := s.Stack
	u.Bucket = awss3.NewBucket(stack, jsii.String("UiFiles"), &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		ServerAccessLogsBucket: s.LogBucket,
		ServerAccessLogsPrefix: jsii.String("ui/"),
		// Only built files: the deployment puts them back.
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// CloudFront's standard logs are written with an ACL, which the
	// access-log bucket (owner-enforced) refuses.
	u.LogBucket = awss3.NewBucket(stack, jsii.String("UiCdnLogs"), &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_PREFERRED,
		ServerAccessLogsBucket: s.LogBucket,
		ServerAccessLogsPrefix: jsii.String("ui-cdn-logs/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id: jsii.String("expire-cdn-logs"), Expiration: awscdk.Duration_Days(jsii.Number(90)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	u.Headers = awscloudfront.NewResponseHeadersPolicy(stack, jsii.String("UiHeaders"), &awscloudfront.ResponseHeadersPolicyProps{
		Comment: jsii.String("agentplane UI: its own files and its region's API only"),
		SecurityHeadersBehavior: &awscloudfront.ResponseSecurityHeadersBehavior{
			ContentSecurityPolicy: &awscloudfront.ResponseHeadersContentSecurityPolicy{
				ContentSecurityPolicy: jsii.String(UIContentSecurityPolicy(site.APIURL)), Override: jsii.Bool(true)},
			ContentTypeOptions: &awscloudfront.ResponseHeadersContentTypeOptions{Override: jsii.Bool(true)},
			FrameOptions: &awscloudfront.ResponseHeadersFrameOptions{
				FrameOption: awscloudfront.HeadersFrameOption_DENY, Override: jsii.Bool(true)},
			ReferrerPolicy: &awscloudfront.ResponseHeadersReferrerPolicy{
				ReferrerPolicy: awscloudfront.HeadersReferrerPolicy_NO_REFERRER, Override: jsii.Bool(true)},
			StrictTransportSecurity: &awscloudfront.ResponseHeadersStrictTransportSecurity{
				AccessControlMaxAge: awscdk.Duration_Days(jsii.Number(730)), IncludeSubdomains: jsii.Bool(true), Override: jsii.Bool(true)},
		},
	})
	// The files are not content-hashed: a short cache, invalidated by
	// every deployment; the page and its configuration are never cached.
	short := awscloudfront.NewCachePolicy(stack, jsii.String("UiCache"), &awscloudfront.CachePolicyProps{
		Comment:                    jsii.String("agentplane UI files: five minutes, invalidated on deploy"),
		DefaultTtl:                 awscdk.Duration_Minutes(jsii.Number(5)),
		MinTtl:                     awscdk.Duration_Seconds(jsii.Number(0)),
		MaxTtl:                     awscdk.Duration_Hours(jsii.Number(1)),
		EnableAcceptEncodingGzip:   jsii.Bool(true),
		EnableAcceptEncodingBrotli: jsii.Bool(true),
	})
	origin := awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(u.Bucket, nil)
	behavior := func(cache awscloudfront.ICachePolicy) *awscloudfront.BehaviorOptions {
		return &awscloudfront.BehaviorOptions{
			Origin:                origin,
			ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:        awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
			CachePolicy:           cache,
			ResponseHeadersPolicy: u.Headers,
			Compress:              jsii.Bool(true),
		}
	}
	props := &awscloudfront.DistributionProps{
		Comment:           jsii.String(fmt.Sprintf("agentplane %s web UI", site.Name)),
		DefaultRootObject: jsii.String("index.html"),
		DefaultBehavior:   behavior(short),
		AdditionalBehaviors: &map[string]*awscloudfront.BehaviorOptions{
			"/index.html":      behavior(awscloudfront.CachePolicy_CACHING_DISABLED()),
			"/" + UIConfigPath: behavior(awscloudfront.CachePolicy_CACHING_DISABLED()),
		},
		HttpVersion:   awscloudfront.HttpVersion_HTTP2_AND_3,
		EnableLogging: jsii.Bool(true),
		LogBucket:     u.LogBucket,
		LogFilePrefix: jsii.String("cloudfront/"),
	}
	if site.AppCertificateARN != "" {
		host, _ := hostOf(site.AppURL)
		props.DomainNames = jsii.Strings(host)
		props.Certificate = awscertificatemanager.Certificate_FromCertificateArn(stack, jsii.String("UiCertificate"), jsii.String(site.AppCertificateARN))
		props.MinimumProtocolVersion = awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021
	}
	u.Distribution = awscloudfront.NewDistribution(stack, jsii.String("Ui"), props)
	u.URL = jsii.String("https://" + *u.Distribution.DistributionDomainName())

	sources := []awss3deployment.ISource{}
	if assets != "" {
		sources = append(sources, awss3deployment.Source_Asset(jsii.String(assets), nil))
	}
	sources = append(sources, awss3deployment.Source_JsonData(jsii.String(UIConfigPath), UIConfig(site.APIURL), nil))
	u.Deployment = awss3deployment.NewBucketDeployment(stack, jsii.String("UiDeployment"), &awss3deployment.BucketDeploymentProps{
		DestinationBucket: u.Bucket,
		Sources:           &sources,
		Distribution:      u.Distribution,
		DistributionPaths: jsii.Strings("/*"),
		Prune:             jsii.Bool(true),
		MemoryLimit:       jsii.Number(256),
		LogGroup:          logGroup(stack, "UiDeploymentLogs"),
	})
	return u, nil
}

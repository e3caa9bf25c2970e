// Command infra is the CDK app of agentplane: the same region stack for the
// US and the EU, generated from the route groups of shared/compose/catalog.
// Run it from infra/ (cdk.json: "cd infra && go run ."); the CDK CLI, or
// scripts/synth.sh, sets CDK_OUTDIR. Next to the templates it writes
// agentplane.layout.json, the groups as the stacks deploy them, for the
// LocalStack hooks.
//
// Context keys (cdk.json or -c key=value; infra/README.md explains each):
//
//	account                 AWS account of both stacks (default
//	                        CDK_DEFAULT_ACCOUNT; without either the stacks
//	                        are account-agnostic)
//	rootDir                 the repository root, holding functions/ and
//	                        dist/ (default ..)
//	uiAssetsDir             the web UI's files (default: none, only
//	                        ui/config.json is deployed)
//	operatorTokenSha256     hex SHA-256 of the operator's sign-up token
//	                        (default: sign-up off)
//	regionLinkSecretName    the region link's secret (agentplane/region-link-token)
//	<r>Region, <r>ApiUrl, <r>AppUrl, <r>BeaconUrl, <r>ApiCertificateArn,
//	<r>AppCertificateArn, <r>Azs, <r>VpcCidr, <r>EgressEips,
//	<r>IngressEips          per region r in {us, eu}: stacks.SitesFromContext
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/infra/stacks"
)

// StackIDs are the two region stacks.
var StackIDs = map[string]string{"us": "Agentplane-US", "eu": "Agentplane-EU"}

// LayoutFile is the name of the layout written next to the templates.
const LayoutFile = "agentplane.layout.json"

func main() {
	defer jsii.Close()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run() error {
	props, err := appProps()
	if err != nil {
		return err
	}
	layout, err := stacks.CatalogLayout()
	if err != nil {
		return err
	}
	app := awscdk.NewApp(props)
	if err := define(app, layout); err != nil {
		return err
	}
	app.Synth(nil)
	return layout.WriteJSON(filepath.Join(*app.Outdir(), LayoutFile))
}

// appProps gives a directly run app (go run ., scripts/synth.sh) the
// context of ../cdk.json, feature flags included, as the CDK CLI gives it
// through CDK_CONTEXT_JSON; so both synthesize the same templates.
func appProps() (*awscdk.AppProps, error) {
	if os.Getenv("CDK_CONTEXT_JSON") != "" {
		return nil, nil
	}
	ctx, err := stacks.CDKContext(filepath.Join("..", "cdk.json"))
	if err != nil {
		return nil, fmt.Errorf("run from infra/: %w", err)
	}
	return &awscdk.AppProps{Context: &ctx}, nil
}

// define adds both region stacks to app.
func define(app awscdk.App, layout *stacks.Layout) error {
	ctx := func(key, def string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	root := ctx("rootDir", "..")
	fns, err := stacks.FunctionNames(filepath.Join(root, "functions"))
	if err != nil {
		return err
	}
	if err := stacks.CheckFunctions(fns, layout); err != nil {
		return err
	}
	account := ctx("account", os.Getenv("CDK_DEFAULT_ACCOUNT"))
	sites, err := stacks.SitesFromContext(func(key string) any {
		return app.Node().TryGetContext(jsii.String(key))
	}, StackIDs)
	if err != nil {
		return err
	}
	ui := ctx("uiAssetsDir", "")
	if ui != "" && !filepath.IsAbs(ui) {
		ui = filepath.Join(root, ui)
	}
	built := map[string]*stacks.RegionStack{}
	// The billing home first: the other region's stack reads the link
	// secret's replica it creates.
	for _, name := range []string{"us", "eu"} {
		env := &awscdk.Environment{Region: jsii.String(sites.Of(name).AWSRegion)}
		if account != "" {
			env.Account = jsii.String(account)
		}
		s, err := stacks.NewRegionStack(app, StackIDs[name], &stacks.RegionStackProps{
			StackProps: awscdk.StackProps{
				Env:         env,
				Description: jsii.String("agentplane, " + name + " region"),
			},
			RegionName:          name,
			Sites:               sites,
			Layout:              layout,
			CodeDir:             filepath.Join(root, "dist"),
			UIAssetsDir:         ui,
			OperatorTokenSHA256: ctx("operatorTokenSha256", ""),
			LinkSecretName:      ctx("regionLinkSecretName", ""),
		})
		if err != nil {
			return err
		}
		built[name] = s
	}
	built["eu"].Stack.AddStackDependency(built["us"].Stack, jsii.String("the EU reads the region link secret's replica and sends usage to the US billing queue"))
	return nil
}

// Command infra is the CDK app of agentplane: the same region stack for the
// US and the EU. Run it from infra/ (cdk.json: "cd infra && go run ."); the
// CDK CLI, or scripts/synth.sh, sets CDK_OUTDIR.
//
// Context keys (cdk.json or -c key=value):
//
//	usRegion  AWS region of the US stack (default us-east-1)
//	euRegion  AWS region of the EU stack (default eu-west-1)
//	account   AWS account of both (default CDK_DEFAULT_ACCOUNT; without
//	          either the stacks are account-agnostic)
//	rootDir   the repository root, holding functions/ and dist/ (default ..)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/infra/stacks"
	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/routes"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// StackIDs are the two region stacks.
var StackIDs = map[string]string{"us": "Agentplane-US", "eu": "Agentplane-EU"}

func main() {
	defer jsii.Close()
	props, err := appProps()
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	app := awscdk.NewApp(props)
	if err := define(app); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	app.Synth(nil)
}

// appProps gives a directly run app (go run ., scripts/synth.sh) the
// context of ../cdk.json, feature flags included, as the CDK CLI gives it
// through CDK_CONTEXT_JSON; so both synthesize the same templates.
func appProps() (*awscdk.AppProps, error) {
	if os.Getenv("CDK_CONTEXT_JSON") != "" {
		return nil, nil
	}
	raw, err := os.ReadFile(filepath.Join("..", "cdk.json"))
	if err != nil {
		return nil, fmt.Errorf("run from infra/: %w", err)
	}
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("cdk.json: %w", err)
	}
	if cfg.Context == nil {
		cfg.Context = map[string]any{}
	}
	// The CLI turns these on by default: construct paths and asset paths
	// in resource metadata (sam local invoke finds a function's code by
	// its aws:asset:path).
	for _, k := range []string{"aws:cdk:enable-path-metadata", "aws:cdk:enable-asset-metadata"} {
		if _, ok := cfg.Context[k]; !ok {
			cfg.Context[k] = true
		}
	}
	return &awscdk.AppProps{Context: &cfg.Context}, nil
}

// define adds both region stacks to app.
func define(app awscdk.App) error {
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
	account := ctx("account", os.Getenv("CDK_DEFAULT_ACCOUNT"))
	regions := map[string]string{"us": ctx("usRegion", "us-east-1"), "eu": ctx("euRegion", "eu-west-1")}
	for _, name := range []string{"us", "eu"} {
		env := &awscdk.Environment{Region: jsii.String(regions[name])}
		if account != "" {
			env.Account = jsii.String(account)
		}
		_, err := stacks.NewRegionStack(app, StackIDs[name], &stacks.RegionStackProps{
			StackProps: awscdk.StackProps{
				Env:         env,
				Description: jsii.String("agentplane, " + name + " region"),
			},
			RegionName: name,
			Functions:  fns,
			CodeDir:    filepath.Join(root, "dist"),
			Groups:     routes.Groups(),
			Workflows:  []workflow.Definition{builds.Definition()},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

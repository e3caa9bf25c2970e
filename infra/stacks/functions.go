// Package stacks holds the CDK definition of one agentplane region, generated
// from the route groups of shared/compose/catalog: the single DynamoDB
// table, the blob bucket and the secrets key; one Lambda function per group
// with its own role (least privilege, from the group's Uses), its own SQS
// queue and dead-letter queue when it consumes topics, and its own schedule
// when it sweeps; the REST API with every group's routes; and one state
// machine per workflow definition, whose steps run in the function of the
// group that runs them. The app in infra/main.go instantiates it for the US
// and the EU.
package stacks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FunctionNames lists the Lambda mains: the directories of dir (functions/)
// that hold a main.go, sorted.
func FunctionNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "main.go")); err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no functions under %s", dir)
	}
	return out, nil
}

// CheckFunctions makes sure functions/ holds exactly one main per group:
// a group without one could not be deployed, and a main without a group
// would be built and never deployed.
func CheckFunctions(fns []string, l *Layout) error {
	have := map[string]bool{}
	for _, f := range fns {
		have[f] = true
	}
	for _, g := range l.Groups {
		if !have[g.Name] {
			return fmt.Errorf("group %s has no function (functions/%s/main.go)", g.Name, g.Name)
		}
		delete(have, g.Name)
	}
	for f := range have {
		return fmt.Errorf("functions/%s is not a group of the catalog", f)
	}
	return nil
}

// pascal turns "org-access" into "OrgAccess" for construct ids.
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r == '-' || r == '_' || r == ' ' || r == '.':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// CDKContext reads the "context" of a cdk.json, feature flags included,
// plus the path and asset metadata the CDK CLI turns on by default (sam
// local invoke finds a function's code by its aws:asset:path). The app run
// directly and the tests synthesize with it, as `cdk synth` would.
func CDKContext(cdkJSON string) (map[string]any, error) {
	raw, err := os.ReadFile(cdkJSON)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", cdkJSON, err)
	}
	if cfg.Context == nil {
		cfg.Context = map[string]any{}
	}
	for _, k := range []string{"aws:cdk:enable-path-metadata", "aws:cdk:enable-asset-metadata"} {
		if _, ok := cfg.Context[k]; !ok {
			cfg.Context[k] = true
		}
	}
	return cfg.Context, nil
}

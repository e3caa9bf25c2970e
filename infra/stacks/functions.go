// Package stacks holds the CDK definition of one agentplane region: the
// single DynamoDB table, the blob bucket, the secrets key, the build queue,
// one Lambda function per functions/ directory, the REST API generated from
// shared/routes and one state machine per workflow definition. The app in
// infra/main.go instantiates it for the US and the EU.
package stacks

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentplane/agentplane/shared/routes"
)

// Background functions serve no route group.
const (
	FnBuildWorker = "build-worker"
	FnBuildStep   = "build-step"
	FnSweeper     = "sweeper"
)

var background = map[string]bool{FnBuildWorker: true, FnBuildStep: true, FnSweeper: true}

// FunctionNames lists the Lambda functions: the directories of dir
// (functions/) that hold a main.go, sorted.
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

// checkFunctions makes sure every route group has a function and every
// function is a route group or a background function.
func checkFunctions(fns []string, groups []routes.Group) error {
	have := map[string]bool{}
	for _, f := range fns {
		have[f] = true
	}
	isGroup := map[string]bool{}
	for _, g := range groups {
		isGroup[g.Name] = true
		if !have[g.Name] {
			return fmt.Errorf("route group %s has no function (functions/%s/main.go)", g.Name, g.Name)
		}
		if background[g.Name] {
			return fmt.Errorf("route group %s has the name of a background function", g.Name)
		}
	}
	for _, f := range fns {
		if !isGroup[f] && !background[f] {
			return fmt.Errorf("function %s is neither a route group nor one of %s, %s, %s", f, FnBuildWorker, FnBuildStep, FnSweeper)
		}
	}
	for b := range background {
		if !have[b] {
			return fmt.Errorf("function %s is missing", b)
		}
	}
	return nil
}

// pascal turns "build-worker" into "BuildWorker" for construct ids.
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

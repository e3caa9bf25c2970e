// Command aslexport writes the resolved ASL of every state machine in a
// cloud assembly to <outdir>/asl/<stack>.<workflow>.asl.json (for example
// cdk.out/asl/Agentplane-US.build.asl.json), for asl-validator. Earlier
// exports are removed first, so the directory holds exactly the current
// state machines.
//
// Usage: aslexport [cdk.out]
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentplane/agentplane/infra/asl"
)

// manifest is the part of cdk.out/manifest.json read here.
type manifest struct {
	Artifacts map[string]struct {
		Type        string `json:"type"`
		Environment string `json:"environment"`
		Properties  struct {
			TemplateFile string `json:"templateFile"`
		} `json:"properties"`
	} `json:"artifacts"`
}

func main() {
	dir := "cdk.out"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	files, err := export(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aslexport:", err)
		os.Exit(1)
	}
	for _, f := range files {
		fmt.Println(f)
	}
}

func export(dir string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	var stacks []string
	for id, a := range m.Artifacts {
		if a.Type == "aws:cloudformation:stack" {
			stacks = append(stacks, id)
		}
	}
	sort.Strings(stacks)
	if len(stacks) == 0 {
		return nil, fmt.Errorf("%s holds no stacks", dir)
	}
	aslDir := filepath.Join(dir, "asl")
	if err := os.RemoveAll(aslDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(aslDir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, id := range stacks {
		a := m.Artifacts[id]
		// aws://account/region; an unknown region stays a placeholder.
		region := a.Environment[strings.LastIndex(a.Environment, "/")+1:]
		if region == "" || strings.HasPrefix(region, "unknown") {
			region = "us-east-1"
		}
		tpl, err := os.ReadFile(filepath.Join(dir, a.Properties.TemplateFile))
		if err != nil {
			return nil, err
		}
		sms, err := asl.StateMachines(tpl, region)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		for _, sm := range sms {
			name := strings.TrimPrefix(sm.Name, id+"-")
			if sm.Name == "" {
				name = sm.LogicalID
			}
			out, _ := json.MarshalIndent(sm.Definition, "", "  ")
			path := filepath.Join(aslDir, id+"."+name+".asl.json")
			if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
				return nil, err
			}
			written = append(written, path)
		}
	}
	if len(written) == 0 {
		return nil, fmt.Errorf("%s: no state machines", dir)
	}
	return written, nil
}

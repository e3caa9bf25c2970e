package builds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"
)

// maxConfigBytes bounds the graph configuration file.
const maxConfigBytes = 1 << 20

// GraphConfig is the part of a graph configuration file (langgraph.json)
// the build checks.
type GraphConfig struct {
	// Graphs maps each graph id to its "path/to/file:attribute" entry,
	// with the path resolved from the repository root.
	Graphs map[string]GraphEntry
	// Dependencies as listed.
	Dependencies []string
}

// GraphEntry is one graph of the configuration.
type GraphEntry struct {
	File string // repository-relative path of the file
	Attr string // variable (or factory) in that file
}

// IDs returns the graph ids, sorted.
func (c GraphConfig) IDs() []string {
	ids := make([]string, 0, len(c.Graphs))
	for id := range c.Graphs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ConfigError lists everything wrong with a graph configuration.
type ConfigError struct {
	Path     string
	Problems []string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("invalid graph configuration %s: %s", e.Path, strings.Join(e.Problems, "; "))
}

// Tree is the set of files of a source tree (repository-relative paths).
type Tree map[string]bool

// hasDir reports whether some file lives under dir ("" or "." is the root).
func (t Tree) hasDir(dir string) bool {
	if dir == "" || dir == "." {
		return len(t) > 0
	}
	prefix := dir + "/"
	for f := range t {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

// resolve turns a path relative to base (a directory of the repository)
// into a repository-relative path; ok is false when it escapes the root.
func resolve(base, rel string) (string, bool) {
	if strings.HasPrefix(rel, "/") {
		return "", false
	}
	p := path.Clean(path.Join(base, rel))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// ParseGraphConfig validates a graph configuration file found at
// configPath in tree: a JSON object with a non-empty "graphs" map whose
// "path:attr" entries (or {"path": "path:attr"} objects) name files of the
// tree, relative to the configuration's directory, and a "dependencies"
// list whose local entries (starting with ".") exist.
func ParseGraphConfig(configPath string, data []byte, tree Tree) (GraphConfig, error) {
	bad := &ConfigError{Path: configPath}
	add := func(format string, args ...any) { bad.Problems = append(bad.Problems, fmt.Sprintf(format, args...)) }
	if len(data) > maxConfigBytes {
		add("the file is larger than %d bytes", maxConfigBytes)
		return GraphConfig{}, bad
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		if err == nil {
			err = fmt.Errorf("not an object")
		}
		add("not a JSON object: %v", err)
		return GraphConfig{}, bad
	}
	base := path.Dir(configPath)
	cfg := GraphConfig{Graphs: map[string]GraphEntry{}}

	graphsRaw, ok := raw["graphs"]
	var graphs map[string]json.RawMessage
	switch {
	case !ok:
		add(`"graphs" is missing: map each graph id to "path/to/file.py:variable"`)
	case json.Unmarshal(graphsRaw, &graphs) != nil || graphs == nil:
		add(`"graphs" must be an object mapping graph ids to "path/to/file:variable"`)
	case len(graphs) == 0:
		add(`"graphs" must name at least one graph`)
	}
	ids := make([]string, 0, len(graphs))
	for id := range graphs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if strings.TrimSpace(id) == "" || len(id) > 255 || strings.ContainsFunc(id, unicode.IsControl) {
			add("graph id %q is not usable (1 to 255 printable characters)", id)
			continue
		}
		var spec string
		if json.Unmarshal(graphs[id], &spec) != nil {
			var obj struct {
				Path string `json:"path"`
			}
			if json.Unmarshal(graphs[id], &obj) != nil || obj.Path == "" {
				add(`graph %q: the entry must be "path/to/file:variable" or an object with such a "path"`, id)
				continue
			}
			spec = obj.Path
		}
		i := strings.LastIndex(spec, ":")
		if i <= 0 || i == len(spec)-1 {
			add(`graph %q: %q is not "path/to/file:variable"`, id, spec)
			continue
		}
		file, attr := spec[:i], spec[i+1:]
		if strings.ContainsAny(attr, "/\\ ") {
			add("graph %q: %q is not a variable name", id, attr)
			continue
		}
		p, ok := resolve(base, file)
		if !ok {
			add("graph %q: %s is outside the repository", id, file)
			continue
		}
		if !tree[p] {
			add("graph %q: file %s not found in the repository", id, p)
			continue
		}
		cfg.Graphs[id] = GraphEntry{File: p, Attr: attr}
	}

	depsRaw, ok := raw["dependencies"]
	switch {
	case !ok:
		add(`"dependencies" is missing: list the packages to install, for example ["."]`)
	case json.Unmarshal(depsRaw, &cfg.Dependencies) != nil || cfg.Dependencies == nil:
		add(`"dependencies" must be a list of strings`)
	}
	for _, dep := range cfg.Dependencies {
		if !strings.HasPrefix(dep, ".") {
			continue // a package name, installed from an index
		}
		p, ok := resolve(base, dep)
		if !ok {
			add("dependency %s is outside the repository", dep)
			continue
		}
		if !tree[p] && !tree.hasDir(p) {
			add("dependency %s not found in the repository", dep)
		}
	}
	if len(bad.Problems) > 0 {
		return GraphConfig{}, bad
	}
	return cfg, nil
}

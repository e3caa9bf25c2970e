package builds_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/builds"
)

func TestParseGraphConfig(t *testing.T) {
	tree := builds.Tree{"agent.py": true, "src/agent.ts": true, "pkg/graphs/chat.py": true, "pkg/pyproject.toml": true}
	ok := []struct {
		name, path, data string
		ids              []string
	}{
		{"python", "langgraph.json", `{"dependencies":["."],"graphs":{"agent":"./agent.py:graph"}}`, []string{"agent"}},
		{"js object entry", "langgraph.json", `{"dependencies":["."],"node_version":"20","graphs":{"a":{"path":"./src/agent.ts:graph","description":"x"},"b":"src/agent.ts:other"}}`, []string{"a", "b"}},
		{"nested config dir", "pkg/langgraph.json", `{"dependencies":[".","langchain_openai"],"graphs":{"chat":"./graphs/chat.py:make_graph"}}`, []string{"chat"}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := builds.ParseGraphConfig(c.path, []byte(c.data), tree)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.IDs(), c.ids) {
				t.Fatalf("ids %v", cfg.IDs())
			}
		})
	}
	bad := []struct{ name, data, want string }{
		{"not json", `{"graphs":`, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
		{"no graphs", `{"dependencies":["."]}`, `"graphs" is missing`},
		{"empty graphs", `{"dependencies":["."],"graphs":{}}`, "at least one graph"},
		{"graphs not object", `{"dependencies":["."],"graphs":["a"]}`, `"graphs" must be an object`},
		{"no colon", `{"dependencies":["."],"graphs":{"a":"agent.py"}}`, `not "path/to/file:variable"`},
		{"empty attr", `{"dependencies":["."],"graphs":{"a":"agent.py:"}}`, `not "path/to/file:variable"`},
		{"missing file", `{"dependencies":["."],"graphs":{"a":"./nope.py:graph"}}`, "file nope.py not found"},
		{"escapes root", `{"dependencies":["."],"graphs":{"a":"../../etc/passwd:x"}}`, "outside the repository"},
		{"absolute", `{"dependencies":["."],"graphs":{"a":"/agent.py:graph"}}`, "outside the repository"},
		{"bad entry", `{"dependencies":["."],"graphs":{"a":5}}`, "the entry must be"},
		{"no dependencies", `{"graphs":{"a":"agent.py:graph"}}`, `"dependencies" is missing`},
		{"dependencies not list", `{"dependencies":".","graphs":{"a":"agent.py:graph"}}`, `"dependencies" must be a list`},
		{"local dependency missing", `{"dependencies":["./lib"],"graphs":{"a":"agent.py:graph"}}`, "dependency ./lib not found"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := builds.ParseGraphConfig("langgraph.json", []byte(c.data), tree)
			var ce *builds.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%q does not mention %q", err, c.want)
			}
		})
	}
	// Every problem is reported, not only the first.
	_, err := builds.ParseGraphConfig("langgraph.json", []byte(`{"graphs":{"a":"x.py:g","b":"y.py:g"}}`), tree)
	if err == nil || len(err.(*builds.ConfigError).Problems) != 3 {
		t.Fatalf("want 3 problems: %v", err)
	}
}

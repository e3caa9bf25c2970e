package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/cmd/agentplane/internal/cli"
)

func TestUsage(t *testing.T) {
	var none *server // no server: none of these reach the API
	// A bare agentplane prints help on stderr and fails (it used to start
	// a server).
	r := none.run(t)
	if r.code != 2 || !strings.Contains(r.stderr, "Usage:") || !strings.Contains(r.stderr, "serve") || r.stdout != "" {
		t.Fatalf("bare agentplane:\n%s", r)
	}
	if r := none.run(t, "--help"); r.code != 0 || !strings.Contains(r.stdout, "deploy") {
		t.Fatalf("--help:\n%s", r)
	}
	if r := none.run(t, "deployments"); r.code != 2 || !strings.Contains(r.stderr, "ls") {
		t.Fatalf("deployments without a subcommand:\n%s", r)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh"`},
		{[]string{"deployments", "bogus"}, `unknown command "bogus"`},
		{[]string{"deployments", "ls", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"deployments", "ls", "--limit", "ten"}, "invalid argument"},
		{[]string{"deployments", "get"}, "accepts 1 arg(s), received 0"},
		{[]string{"threads", "get", "dep"}, "accepts 2 arg(s)"},
		{[]string{"logs", "0192f0c1-0000-7000-8000-000000000000"}, "DEPLOYMENT/REVISION or pass --deployment"},
		{[]string{"logs", "a/r", "--deployment", "b"}, "--deployment is"},
		{[]string{"deploy", "/no/such/dir"}, "neither a directory nor a repository URL"},
		{[]string{"deploy", ".", "--progress", "fancy"}, "--progress must be"},
		{[]string{"deploy", ".", "--secret", "=x"}, "expected NAME=VALUE"},
		{[]string{"deploy", ".", "--secret", "UNSET_VAR"}, "no environment variable UNSET_VAR"},
		{[]string{"deploy", ".", "--secrets-file", "/no/such/file"}, "--secrets-file"},
		{[]string{"keys", "create", "--org-role", "boss"}, "--org-role must be one of"},
		{[]string{"keys", "create", "--grant", "ws"}, "expected WORKSPACE_ID=ROLE"},
		{[]string{"mcp", "--stdio", "--addr", "127.0.0.1:1"}, "exclude each other"},
		{[]string{"deployments", "ls", "--url", "ftp://x"}, "not an http(s) URL"},
		{[]string{"deployments", "ls", "--url", "http://user:pw@127.0.0.1:1"}, "must not carry credentials"},
	} {
		r := none.run(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("agentplane %s: want exit 2 with %q, got\n%s", strings.Join(c.args, " "), c.want, r)
		}
	}
}

func TestVersion(t *testing.T) {
	var none *server
	r := none.run(t, "version")
	if r.code != 0 || !strings.Contains(r.stdout, "v0.0.0-test") || !strings.Contains(r.stdout, "testcommit") || !strings.Contains(r.stdout, "go1.") {
		t.Fatalf("version:\n%s", r)
	}
	v := jsonOf[map[string]string](t, none.run(t, "version", "--json"))
	if v["version"] != "v0.0.0-test" || v["commit"] != "testcommit" || !strings.HasPrefix(v["go"], "go1.") || v["platform"] == "" {
		t.Fatalf("version --json: %v", v)
	}
}

// API errors: missing and wrong keys (4), 404s (5), 422 with its locs (1),
// an unreachable server (1). The key is never printed (checked by run).
func TestAPIErrors(t *testing.T) {
	s := startServer(t)
	r := s.runWith(t, runOpts{env: map[string]string{"AGENTPLANE_API_KEY": ""}}, "deployments", "ls")
	if r.code != 4 || !strings.Contains(r.stderr, "no API key: set AGENTPLANE_API_KEY") {
		t.Fatalf("missing key:\n%s", r)
	}
	s.fails(t, 4, "401 Unauthorized: Invalid API key", "deployments", "ls", "--api-key", "ap_wrong_key_000000000000000000")
	s.fails(t, 5, "404 Not Found: Deployment ID 00000000-0000-4000-8000-000000000000 not found.", "deployments", "get", "00000000-0000-4000-8000-000000000000")
	s.fails(t, 5, `no deployment named "nope"`, "deployments", "get", "nope")
	s.fails(t, 5, `no deployment named "nope"`, "revisions", "ls", "nope")
	s.fails(t, 5, "not found", "keys", "revoke", "00000000-0000-4000-8000-000000000000")
	r = s.fails(t, 1, "422 Unprocessable Entity", "keys", "create", "--grant", "not-a-uuid=Editor")
	if !strings.Contains(r.stderr, "body.workspaces[0].workspace_id: Input should be a valid UUID") {
		t.Errorf("422 locs:\n%s", r)
	}
	s.fails(t, 1, "query.limit: Input should be greater than or equal to 1", "deployments", "ls", "--limit", "0")
	s.fails(t, 5, "Deployment ID", "redeploy", "00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000001")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	s.fails(t, 1, "cannot reach the API at "+closed, "deployments", "ls", "--url", closed)
}

func TestKeysAndWorkspaces(t *testing.T) {
	s := startServer(t)
	ws := jsonOf[[]struct {
		ID   string `json:"id"`
		Role string `json:"role"`
	}](t, s.ok(t, "workspaces", "ls", "--json"))
	if len(ws) != 1 || ws[0].Role != "Admin" {
		t.Fatalf("workspaces: %+v", ws)
	}
	def := ws[0].ID

	// keys create prints the new key once; ls shows records only.
	r := s.ok(t, "keys", "create", "--description", "ci", "--grant", def+"=editor")
	var newKey string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "key" {
			newKey = f[1]
		}
	}
	if !strings.HasPrefix(newKey, "ap_") || !strings.Contains(r.stderr, "shown only once") || !strings.Contains(r.stdout, def+"=Editor") {
		t.Fatalf("keys create:\n%s", r)
	}
	created := jsonOf[struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}](t, s.ok(t, "keys", "create", "--description", "script", "--org-role", "Viewer", "--json"))
	if !strings.HasPrefix(created.Key, "ap_") || created.ID == "" {
		t.Fatalf("keys create --json: %+v", created)
	}
	ls := s.ok(t, "keys", "ls")
	if !strings.Contains(ls.stdout, "ci") || !strings.Contains(ls.stdout, "script") || strings.Contains(ls.stdout, newKey) || strings.Contains(ls.stdout, created.Key) {
		t.Fatalf("keys ls shows keys or misses records:\n%s", ls)
	}
	keys := jsonOf[[]map[string]any](t, s.ok(t, "keys", "ls", "--json"))
	if len(keys) != 3 {
		t.Fatalf("keys ls --json: %v", keys)
	}
	for _, k := range keys {
		if _, has := k["key"]; has {
			t.Fatalf("keys ls --json has a key: %v", k)
		}
	}

	// The new Editor key works for its workspace, not for admin calls.
	editor := &server{url: s.url, key: newKey}
	if r := editor.ok(t, "deployments", "ls"); !strings.Contains(r.stdout, "NAME") {
		t.Errorf("editor key: %s", r)
	}
	editor.fails(t, 4, "403 Forbidden", "keys", "ls")

	// A second workspace: X-Tenant-Id is now needed, from --workspace or
	// AGENTPLANE_WORKSPACE.
	second := jsonOf[struct {
		ID string `json:"id"`
	}](t, s.ok(t, "workspaces", "create", "team-b", "--json"))
	s.fails(t, 1, "--workspace or AGENTPLANE_WORKSPACE", "deployments", "ls")
	s.ok(t, "deployments", "ls", "--workspace", second.ID)
	if r := s.runWith(t, runOpts{env: map[string]string{"AGENTPLANE_WORKSPACE": def}}, "deployments", "ls"); r.code != 0 {
		t.Errorf("AGENTPLANE_WORKSPACE: %s", r)
	}
	if r := s.ok(t, "workspaces", "ls"); !strings.Contains(r.stdout, "team-b") {
		t.Errorf("workspaces ls:\n%s", r)
	}
	// The editor key cannot reach the second workspace.
	editor.fails(t, 4, "403", "deployments", "ls", "--workspace", second.ID)

	// Revoked keys stop working at once.
	s.ok(t, "keys", "revoke", created.ID)
	if r := jsonOf[map[string][]string](t, s.ok(t, "keys", "revoke", keyID(t, s, "ci"), "--json")); len(r["revoked"]) != 1 {
		t.Errorf("revoke --json: %v", r)
	}
	editor.fails(t, 4, "401", "deployments", "ls")
}

func keyID(t *testing.T, s *server, description string) string {
	t.Helper()
	for _, k := range jsonOf[[]map[string]any](t, s.ok(t, "keys", "ls", "--json")) {
		if k["description"] == description {
			return k["id"].(string)
		}
	}
	t.Fatalf("no key %q", description)
	return ""
}

func TestCompletion(t *testing.T) {
	s := startServer(t)
	for shell, want := range map[string]string{"bash": "__start_agentplane", "zsh": "#compdef agentplane", "fish": "complete -c agentplane", "powershell": "Register-ArgumentCompleter"} {
		if r := s.ok(t, "completion", shell); !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
	_, dir := agentRepo(t)
	s.ok(t, "deploy", dir)
	// What a shell asks: deployment names, completed from the API.
	r := s.ok(t, "__complete", "deployments", "get", "my")
	if !strings.Contains(r.stdout, "my-agent") {
		t.Errorf("deployment name completion:\n%s", r)
	}
	r = s.ok(t, "__complete", "dep")
	if !strings.Contains(r.stdout, "deploy") || !strings.Contains(r.stdout, "deployments") {
		t.Errorf("command completion:\n%s", r)
	}
}

// fakeToolServer stands in for shared/domains/toolserver in the tests of
// the mcp command's wiring (listening, stdio, shutdown, options).
type fakeToolServer struct {
	opts cli.ToolServerOptions
}

func (f *fakeToolServer) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "endpoint": f.opts.Endpoint, "local": f.opts.AllowLocalEndpoints})
	})
}

func (f *fakeToolServer) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, getenv func(string) string) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if _, err := io.WriteString(out, "echo "+sc.Text()+" key="+getenv("SERVICE_API_KEY")+"\n"); err != nil {
			return err
		}
	}
	return sc.Err()
}

func TestMCP(t *testing.T) {
	var none *server
	// This build has no tool server.
	if r := none.run(t, "mcp"); r.code != 1 || !strings.Contains(r.stderr, "not available in this build") {
		t.Fatalf("mcp without a tool server:\n%s", r)
	}

	var built []*fakeToolServer
	factory := func(o cli.ToolServerOptions) (cli.MCPServer, error) {
		f := &fakeToolServer{opts: o}
		built = append(built, f)
		return f, nil
	}
	r := none.runWith(t, runOpts{tools: factory, stdin: "ping\n", env: map[string]string{"SERVICE_API_KEY": "k1", "AGENTPLANE_URL": "http://platform.example"}}, "mcp", "--stdio")
	if r.code != 0 || r.stdout != "echo ping key=k1\n" {
		t.Fatalf("mcp --stdio:\n%s", r)
	}
	if o := built[0].opts; o.Endpoint != "http://platform.example" || !o.AllowLocalEndpoints || o.Version != "v0.0.0-test" || o.Logger == nil {
		t.Errorf("stdio options: %+v", o)
	}

	// HTTP: listens on --addr until interrupted, then exits 0.
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		done <- none.runWith(t, runOpts{tools: factory, ctx: ctx, env: map[string]string{"SERVICE_ENDPOINT": "https://ignored.example"}},
			"mcp", "--addr", addr, "--endpoint", "https://api.example.com")
	}()
	body := getMCP(t, addr)
	if body["path"] != "/mcp" || body["endpoint"] != "https://api.example.com" || body["local"] != false {
		t.Errorf("HTTP form: %v", body)
	}
	cancel()
	r = <-done
	if r.code != 0 || !strings.Contains(r.stdout, "listening on http://"+addr+"/mcp") {
		t.Fatalf("mcp HTTP:\n%s", r)
	}
	// AGENTPLANE_MCP_ADDR sets the address; a bad one is a usage error.
	if r := none.runWith(t, runOpts{tools: factory, env: map[string]string{"AGENTPLANE_MCP_ADDR": "nonsense"}}, "mcp"); r.code != 2 || !strings.Contains(r.stderr, `--addr "nonsense"`) {
		t.Errorf("bad AGENTPLANE_MCP_ADDR:\n%s", r)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// getMCP waits until the fake tool server answers at addr and returns
// what it reports.
func getMCP(t *testing.T, addr string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := http.Get("http://" + addr + "/mcp")
		if err == nil {
			var body map[string]any
			err = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp did not listen: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The container form runs what deploy/toolserver/Dockerfile says: its
// command, with its environment, listens on port 8000 of every interface
// and calls the platform SERVICE_ENDPOINT names (here on 127.0.0.1, the
// only address tests listen on).
func TestMCPContainerForm(t *testing.T) {
	raw, err := os.ReadFile("../../../../deploy/toolserver/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	var cmd []string
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "FROM "):
			env, cmd = map[string]string{}, nil // only the final stage counts
		case strings.HasPrefix(line, "ENV "):
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "ENV "), "=")
			if !ok {
				t.Fatalf("ENV without =: %q", line)
			}
			env[k] = v
		case strings.HasPrefix(line, "CMD "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "CMD ")), &cmd); err != nil {
				t.Fatalf("CMD %q: %v", line, err)
			}
		}
	}
	if env["AGENTPLANE_MCP_ADDR"] != "0.0.0.0:8000" || len(cmd) == 0 || cmd[0] != "mcp" {
		t.Fatalf("Dockerfile: env %v, cmd %v", env, cmd)
	}
	for k := range env {
		if k != "AGENTPLANE_MCP_ADDR" {
			t.Errorf("Dockerfile sets %s, which agentplane mcp does not read", k)
		}
	}
	var got cli.ToolServerOptions
	factory := func(o cli.ToolServerOptions) (cli.MCPServer, error) {
		got = o
		return &fakeToolServer{opts: o}, nil
	}
	addr := freeAddr(t)
	env["AGENTPLANE_MCP_ADDR"] = addr
	env["SERVICE_ENDPOINT"] = "http://10.1.2.3:8000"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	var none *server
	go func() { done <- none.runWith(t, runOpts{tools: factory, ctx: ctx, env: env}, cmd...) }()
	body := getMCP(t, addr)
	cancel()
	if r := <-done; r.code != 0 {
		t.Fatalf("agentplane %v:\n%s", cmd, r)
	}
	if body["endpoint"] != "http://10.1.2.3:8000" || body["local"] != true || got.Endpoint != "http://10.1.2.3:8000" {
		t.Errorf("container form: %v", body)
	}
}

package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDotenv(t *testing.T) {
	in := `# comment
PLAIN=value
export EXPORTED=yes
SPACED =  padded value  
WITH_COMMENT=abc # a comment
HASH=abc#def
SINGLE='a $HOME "x" \n'
DOUBLE="line1\nline2 \"q\" \\ $HOME"
EMPTY=
MULTI="first
second"
EQUALS=a=b=c

CRLF=crlf` + "\r\n"
	got, err := parseDotenv(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"PLAIN", "value"}, {"EXPORTED", "yes"}, {"SPACED", "padded value"}, {"WITH_COMMENT", "abc"},
		{"HASH", "abc#def"}, {"SINGLE", `a $HOME "x" \n`}, {"DOUBLE", "line1\nline2 \"q\" \\ $HOME"},
		{"EMPTY", ""}, {"MULTI", "first\nsecond"}, {"EQUALS", "a=b=c"}, {"CRLF", "crlf"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	for _, bad := range []string{"NOEQUALS", "=value", "A='open", `A="open`, `A="x" trailing`, "A='x' trailing"} {
		if _, err := parseDotenv(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The parser never panics and never loses a name: every pair it returns
// has a non-empty name without '='.
func FuzzParseDotenv(f *testing.F) {
	for _, seed := range []string{"A=1", "export B='x'", "C=\"a\\nb\"", "D=\"multi\nline\"", "# c\n\nE=f # g", "F=\"\\", "G='", "=", "H=\"x\\\"\ny\""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pairs, err := parseDotenv(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, p := range pairs {
			if p[0] == "" || strings.Contains(p[0], "=") {
				t.Fatalf("bad name %q from %q", p[0], s)
			}
		}
	})
}

func TestFormatLoc(t *testing.T) {
	for _, c := range []struct {
		loc  []any
		want string
	}{
		{[]any{"body", "workspaces", float64(0), "role"}, "body.workspaces[0].role"},
		{[]any{"query", "limit"}, "query.limit"},
		{[]any{"header", "X-Tenant-Id"}, "header.X-Tenant-Id"},
		{nil, "(request)"},
	} {
		if got := formatLoc(c.loc); got != c.want {
			t.Errorf("%v: %s, want %s", c.loc, got, c.want)
		}
	}
}

func TestDecodeError(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   string
	}{
		{404, `{"detail": "Deployment ID x not found."}`, "GET /p: 404 Not Found: Deployment ID x not found."},
		{422, `{"detail": [{"loc": ["body", "name"], "msg": "Field required", "type": "missing"}]}`, "422 Unprocessable Entity\n  body.name: Field required (missing)"},
		{502, "<html>" + strings.Repeat("x", 1000) + "</html>", "502 Bad Gateway: <html>xxx"},
		{500, "", "500 Internal Server Error"},
		{400, `{"detail": "The X-Tenant-Id header is required: this API key reaches 2 workspaces"}`, "agentplane workspaces ls"},
		{400, `{"detail": "evil \u001b[2J"}`, "evil \uFFFD[2J"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		res, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		err = decodeError("GET", "/p", res)
		res.Body.Close()
		srv.Close()
		if !strings.Contains(err.Error(), c.want) || len(err.Error()) > 500 {
			t.Errorf("%d %q: %q, want it to contain %q", c.status, c.body, err, c.want)
		}
	}
}

func TestRevisionRef(t *testing.T) {
	for _, c := range []struct {
		arg, flag, dep, rev string
		bad                 bool
	}{
		{"my-agent/r1", "", "my-agent", "r1", false},
		{"r1", "my-agent", "my-agent", "r1", false},
		{"my-agent/r1", "my-agent", "my-agent", "r1", false},
		{"team/agent/r1", "", "team/agent", "r1", false}, // names may hold a slash; ids never do
		{"r1", "", "", "", true},
		{"a/r1", "b", "", "", true},
		{"a/", "", "", "", true},
	} {
		dep, rev, err := revisionRef(c.arg, c.flag)
		if (err != nil) != c.bad || dep != c.dep || rev != c.rev {
			t.Errorf("%q --deployment %q: %q %q %v", c.arg, c.flag, dep, rev, err)
		}
	}
}

func TestMergeSecrets(t *testing.T) {
	stored := []secret{{"A", "********"}, {"B", "********"}, {"C", "********"}}
	got := mergeSecrets(stored, map[string]string{"B": "new", "D": "d"}, []string{"B", "D"}, []string{"C"})
	want := []secret{{"A", "********"}, {"B", "new"}, {"D", "d"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestResolveSource(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := resolveSource(dir)
	if err != nil || s.repoURL != "file://"+filepath.ToSlash(dir) || s.name != "agent" {
		t.Errorf("dir: %+v %v", s, err)
	}
	for arg, name := range map[string]string{
		"https://github.com/acme/my-agent.git": "my-agent",
		"https://github.com/acme/my-agent/":    "my-agent",
		"git@github.com:acme/tool.git":         "",
	} {
		s, err := resolveSource(arg)
		if err != nil || s.repoURL != arg {
			t.Errorf("%s: %+v %v", arg, s, err)
		}
		if name != "" && s.name != name {
			t.Errorf("%s: name %q, want %q", arg, s.name, name)
		}
	}
	if _, err := resolveSource(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("a directory without .git: %v", err)
	}
}

func TestSameRepo(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"/home/me/agent", "file:///home/me/agent", true},
		{"https://github.com/acme/agent.git", "https://github.com/acme/agent", true},
		{"https://github.com/acme/agent/", "https://github.com/acme/agent", true},
		{"https://github.com/acme/agent", "https://github.com/acme/other", false},
		{"file:///home/me/a", "file:///home/me/b", false},
	} {
		if got := sameRepo(c.a, c.b); got != c.same {
			t.Errorf("sameRepo(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestFailingStep(t *testing.T) {
	lines := []logLine{{Step: "Queue"}, {Step: "FetchSource"}, {Step: "ValidateConfig"}, {Step: "MarkBUILD_FAILED"}, {Step: "Sweep"}}
	if got := failingStep(lines); got != "ValidateConfig" {
		t.Errorf("failing step %q", got)
	}
	if got := failingStep(nil); got != "" {
		t.Errorf("no lines: %q", got)
	}
}

func TestCellAndSanitize(t *testing.T) {
	if got := cell("evil\x1b[2J\u202ename"); strings.ContainsAny(got, "\x1b\u202e") {
		t.Errorf("cell kept control characters: %q", got)
	}
	if cell("") != "-" || cell("plain") != "plain" {
		t.Error("cell")
	}
	if got := sanitize("a\nb\tc\x1bd"); got != "a\nb\tc\uFFFDd" {
		t.Errorf("sanitize %q", got)
	}
}

func TestTTYDisplay(t *testing.T) {
	var b strings.Builder
	d := newTTYDisplay(&b, 40)
	d.status("QUEUED", 0)
	d.log(logLine{Timestamp: time.Now(), Step: "FetchSource", Message: strings.Repeat("long ", 30)})
	d.status("BUILD_FAILED", time.Second)
	d.done(revision{Status: "BUILD_FAILED"}, time.Second)
	d.done(revision{Status: "BUILD_FAILED"}, time.Second) // idempotent
	out := b.String()
	for _, want := range []string{"✗ QUEUED", "✗ BUILD_FAILED in 1s", "[FetchSource] long"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%q", want, out)
		}
	}
	for _, line := range strings.Split(out, clearLine) {
		if first, _, _ := strings.Cut(line, "\n"); strings.HasPrefix(first, "⠋") && len([]rune(first)) > 39 {
			t.Errorf("spinner line wider than the terminal: %q", first)
		}
	}
}

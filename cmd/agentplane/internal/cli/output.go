package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// The API's resources, as far as the tables show them; --json prints the
// API's own answer, so fields not named here are never lost.

type deployment struct {
	ID           string `json:"id"`
	TenantID     string `json:"tenant_id"`
	Name         string `json:"name"`
	Source       string `json:"source"`
	SourceConfig struct {
		RepoURL        *string `json:"repo_url"`
		DeploymentType *string `json:"deployment_type"`
		CustomURL      *string `json:"custom_url"`
		BuildOnPush    *bool   `json:"build_on_push"`
	} `json:"source_config"`
	SourceRevisionConfig revisionConfig `json:"source_revision_config"`
	Secrets              []secret       `json:"secrets"`
	CreatedAt            time.Time      `json:"created_at"`
	UpdatedAt            time.Time      `json:"updated_at"`
	Status               string         `json:"status"`
	LatestRevisionID     *string        `json:"latest_revision_id"`
	ActiveRevisionID     *string        `json:"active_revision_id"`
}

type revisionConfig struct {
	RepoRef         *string `json:"repo_ref"`
	GraphConfigPath *string `json:"graph_config_path"`
	ImageURI        *string `json:"image_uri"`
	RepoCommitSHA   *string `json:"repo_commit_sha"`
}

type secret struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type revision struct {
	ID                   string         `json:"id"`
	DeploymentID         string         `json:"deployment_id"`
	CreatedAt            time.Time      `json:"created_at"`
	UpdatedAt            time.Time      `json:"updated_at"`
	Status               string         `json:"status"`
	StatusMessage        *string        `json:"status_message"`
	SourceRevisionConfig revisionConfig `json:"source_revision_config"`
	Graphs               []string       `json:"graphs"`
	RedeployedFrom       *string        `json:"redeployed_from"`
	Trigger              string         `json:"trigger"`
}

type logLine struct {
	Timestamp time.Time `json:"timestamp"`
	Step      string    `json:"step"`
	Message   string    `json:"message"`
}

type page[T any] struct {
	Resources []T `json:"resources"`
	Offset    int `json:"offset"`
}

// terminal reports whether a revision status is final (docs/control-plane.md:
// the first six statuses are in progress).
func terminal(status string) bool {
	switch status {
	case "CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING":
		return false
	}
	return true
}

// decodeRaw decodes raw into v for the table view.
func decodeRaw(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	return nil
}

// printJSON writes v indented (raw JSON is re-indented, not re-encoded).
func printJSON(w io.Writer, v any) error {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		var buf bytes.Buffer
		if err := json.Indent(&buf, x, "", "  "); err != nil {
			return err
		}
		raw = buf.Bytes()
	default:
		var err error
		if raw, err = json.MarshalIndent(v, "", "  "); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s\n", raw)
	return err
}

// table writes aligned columns.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// fields writes "name  value" lines.
func fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s\t%s\n", kv[i], cell(kv[i+1]))
	}
	return tw.Flush()
}

// cell makes a value safe for one table cell: control characters (a
// terminal escape in a name, say) and tabs are shown escaped.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := fmt.Sprintf("%+q", s)
	return q[1 : len(q)-1]
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// compactJSON shows a JSON value on one line, bounded.
func compactJSON(v any, n int) string {
	if v == nil {
		return ""
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return short(string(raw), n)
}

// morePages tells a table reader how to get the next page.
func (a *app) morePages(got, limit, next int) {
	if got >= limit {
		fmt.Fprintf(a.env.Stderr, "(more results: --offset %d)\n", next)
	}
}

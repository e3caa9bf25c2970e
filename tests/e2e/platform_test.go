package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// api calls the platform's HTTP API with key and decodes the answer into
// out (when not nil), failing t unless the status is want.
func api(t testing.TB, base, key, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// tenant is one workspace with its own key, and what the test put in it
// through the platform's HTTP API. Both tenants use the same names for
// their project, thread, dataset, prompt and experiment, and their own
// marker in every text, so an answer that mixes them shows.
type tenant struct {
	Name, Marker string
	WS, Key      string
	Turns        int

	ProjectID  string
	Messages   []any
	RunIDs     map[string]bool
	Roots      int
	TraceID    string
	TraceRuns  []string
	ErrorTrace string
	TurnRoot0  string

	DatasetID         string
	Examples          []string // created: [edited, deleted, kept]
	V1                string
	CurrentExamples   []string
	EditedOutputsNow  map[string]any
	EditedOutputsThen map[string]any

	PromptID, Commit1, Commit2 string
	ExperimentID               string
	ExperimentLatency          float64
	ExperimentScore            float64
	Traces                     int
}

// Names shared by both tenants.
const (
	projectName    = "support-bot"
	threadID       = "conversation-1"
	datasetName    = "qa"
	promptName     = "answer"
	experimentName = "qa-baseline"
)

// newTenant creates a workspace and a key that reaches only it (Editor),
// with the admin key.
func newTenant(t testing.TB, s *server, name, marker string, turns int) *tenant {
	t.Helper()
	var ws struct {
		ID string `json:"id"`
	}
	api(t, s.API, adminKey, "POST", "/api/v1/workspaces", map[string]any{"display_name": name}, 201, &ws)
	var key struct {
		Key string `json:"key"`
	}
	api(t, s.API, adminKey, "POST", "/api/v1/api-key", map[string]any{
		"description": "e2e " + name, "org_role": "Viewer", "workspaces": []any{map[string]any{"workspace_id": ws.ID, "role": "Editor"}},
	}, 201, &key)
	return &tenant{Name: name, Marker: marker, WS: ws.ID, Key: key.Key, Turns: turns, RunIDs: map[string]bool{}}
}

func dotted(at time.Time, id string) string {
	at = at.UTC()
	return at.Format("20060102T150405") + fmt.Sprintf("%06dZ", at.Nanosecond()/1000) + id
}

// msg is message i of the tenant's conversation: long enough, and with
// characters JSON encoders escape differently, to make several pages.
func (tn *tenant) msg(turn int, role string) map[string]any {
	fill := strings.Repeat(fmt.Sprintf("%s <%d> & \"q\" é 🚀 ", tn.Marker, turn), 8+turn%5)
	return map[string]any{"role": role, "content": fmt.Sprintf("%s %s %d: %s", tn.Marker, role, turn, fill)}
}

// seed puts a conversation, an error, a deep trace, feedback, a dataset
// with versions, a prompt with two commits and an experiment in the
// tenant's workspace, then waits until the queued ingest is applied.
func (tn *tenant) seed(t testing.TB, s *server) {
	t.Helper()
	call := func(method, path string, body any, want int, out any) {
		t.Helper()
		api(t, s.API, tn.Key, method, path, body, want, out)
	}
	var project struct {
		ID string `json:"id"`
	}
	call("POST", "/sessions", map[string]any{"name": projectName, "description": tn.Name}, 200, &project)
	tn.ProjectID = project.ID

	base := time.Now().Add(-time.Hour).UTC()
	var posts []any
	run := func(id, parent, parentDotted, trace, name, typ string, at time.Time, dur time.Duration, fields map[string]any) string {
		d := dotted(at, id)
		if parentDotted != "" {
			d = parentDotted + "." + d
		}
		r := map[string]any{"id": id, "trace_id": trace, "dotted_order": d, "name": name, "run_type": typ,
			"start_time": at.Format(time.RFC3339Nano), "end_time": at.Add(dur).Format(time.RFC3339Nano), "session_name": projectName}
		if parent != "" {
			r["parent_run_id"] = parent
		}
		for k, v := range fields {
			r[k] = v
		}
		posts = append(posts, r)
		tn.RunIDs[id] = true
		return d
	}
	meta := map[string]any{"metadata": map[string]any{"thread_id": threadID, "tenant": tn.Marker}}
	for i := 0; i < tn.Turns; i++ {
		at := base.Add(time.Duration(i) * time.Second)
		root, child := uuid.NewString(), uuid.NewString()
		user, assistant := tn.msg(i, "user"), tn.msg(i, "assistant")
		tn.Messages = append(tn.Messages, user, assistant)
		d := run(root, "", "", root, "turn", "chain", at, 500*time.Millisecond, map[string]any{
			"inputs": map[string]any{"question": user["content"]}, "outputs": map[string]any{"answer": assistant["content"]}, "extra": meta})
		run(child, root, d, root, "model", "llm", at.Add(time.Millisecond), 400*time.Millisecond, map[string]any{
			"inputs": map[string]any{"messages": []any{user}}, "outputs": map[string]any{"choices": []any{map[string]any{"message": assistant}}},
			"extra": meta, "prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30})
		if i == 0 {
			tn.TurnRoot0 = root
		}
		tn.Roots++
	}
	// A failed trace and a deep one.
	tn.ErrorTrace = uuid.NewString()
	run(tn.ErrorTrace, "", "", tn.ErrorTrace, "agent", "chain", base.Add(-time.Minute), time.Second, map[string]any{"error": "boom " + tn.Marker, "inputs": map[string]any{"q": tn.Marker}})
	tn.TraceID = uuid.NewString()
	d := run(tn.TraceID, "", "", tn.TraceID, "research", "chain", base.Add(-30*time.Second), 20*time.Second, map[string]any{"inputs": map[string]any{"topic": tn.Marker}})
	tn.TraceRuns = []string{tn.TraceID}
	for i := 0; i < 12; i++ {
		id := uuid.NewString()
		run(id, tn.TraceID, d, tn.TraceID, "lookup", "tool", base.Add(-30*time.Second+time.Duration(i+1)*time.Second), time.Second,
			map[string]any{"outputs": map[string]any{"notes": fmt.Sprintf("%s note %d %s", tn.Marker, i, strings.Repeat("n", 300))}})
		tn.TraceRuns = append(tn.TraceRuns, id)
	}
	tn.Roots += 2
	call("POST", "/runs/batch", map[string]any{"post": posts}, 202, nil)

	// The dataset: three examples (v1), an edit, a delete, a tag on v1.
	var ds struct {
		ID string `json:"id"`
	}
	call("POST", "/datasets", map[string]any{"name": datasetName, "description": tn.Name + " questions", "data_type": "kv", "extra": map[string]any{"metadata": map[string]any{"tenant": tn.Marker}}}, 200, &ds)
	tn.DatasetID = ds.ID
	var created []struct {
		ID         string `json:"id"`
		ModifiedAt string `json:"modified_at"`
	}
	var bulk []any
	for i, split := range []string{"train", "test", "train"} {
		bulk = append(bulk, map[string]any{"dataset_id": ds.ID, "inputs": map[string]any{"question": fmt.Sprintf("%s question %d", tn.Marker, i)},
			"outputs": map[string]any{"answer": fmt.Sprintf("%s answer %d", tn.Marker, i)}, "split": split})
	}
	call("POST", "/examples/bulk", bulk, 200, &created)
	for _, e := range created {
		tn.Examples = append(tn.Examples, e.ID)
	}
	tn.V1 = created[0].ModifiedAt
	tn.EditedOutputsThen = map[string]any{"answer": tn.Marker + " answer 0"}
	tn.EditedOutputsNow = map[string]any{"answer": tn.Marker + " answer 0, edited"}
	call("PATCH", "/examples/"+tn.Examples[0], map[string]any{"outputs": tn.EditedOutputsNow}, 200, nil)
	call("DELETE", "/examples/"+tn.Examples[1], nil, 200, nil)
	call("PUT", "/datasets/"+ds.ID+"/tags", map[string]any{"as_of": tn.V1, "tag": "initial"}, 200, nil)
	tn.CurrentExamples = []string{tn.Examples[0], tn.Examples[2]}

	// The prompt, committed twice.
	var repo struct {
		Repo struct {
			ID string `json:"id"`
		} `json:"repo"`
	}
	call("POST", "/repos/", map[string]any{"repo_handle": promptName, "description": tn.Name + " answers"}, 200, &repo)
	tn.PromptID = repo.Repo.ID
	var c1, c2 struct {
		Commit struct {
			CommitHash string `json:"commit_hash"`
		} `json:"commit"`
	}
	call("POST", "/commits/-/"+promptName, map[string]any{"manifest": promptManifest(tn.Marker + " v1"), "parent_commit": nil}, 200, &c1)
	call("POST", "/commits/-/"+promptName, map[string]any{"manifest": promptManifest(tn.Marker + " v2"), "parent_commit": c1.Commit.CommitHash}, 200, &c2)
	tn.Commit1, tn.Commit2 = c1.Commit.CommitHash, c2.Commit.CommitHash

	// The experiment: one run per current example, then feedback.
	var exp struct {
		ID string `json:"id"`
	}
	call("POST", "/sessions", map[string]any{"name": experimentName, "reference_dataset_id": ds.ID}, 200, &exp)
	tn.ExperimentID = exp.ID
	posts = nil
	var expRuns []string
	lat := time.Duration(tn.ExperimentLatency * float64(time.Second))
	for i, ex := range tn.CurrentExamples {
		id := uuid.NewString()
		at := base.Add(time.Duration(i) * time.Minute)
		d := dotted(at, id)
		posts = append(posts, map[string]any{"id": id, "trace_id": id, "dotted_order": d, "name": "target", "run_type": "chain",
			"start_time": at.Format(time.RFC3339Nano), "end_time": at.Add(lat).Format(time.RFC3339Nano), "session_id": exp.ID,
			"reference_example_id": ex, "inputs": map[string]any{"q": tn.Marker}, "outputs": map[string]any{"a": tn.Marker}})
		expRuns = append(expRuns, id)
	}
	call("POST", "/runs/batch", map[string]any{"post": posts}, 202, nil)
	tn.Traces = tn.Roots + len(expRuns)

	// Wait until the ingest is applied, then add feedback.
	waitFor(t, "runs of "+tn.Name, func() bool {
		var page struct {
			Runs []any `json:"runs"`
		}
		api(t, s.API, tn.Key, "POST", "/runs/query", map[string]any{"session": []string{tn.ProjectID, tn.ExperimentID}, "limit": 100, "select": []string{"id"}}, 200, &page)
		return len(page.Runs) == len(tn.RunIDs)+len(expRuns)
	})
	call("POST", "/feedback", map[string]any{"run_id": tn.TurnRoot0, "key": "helpfulness", "score": 1}, 200, nil)
	for _, r := range expRuns {
		call("POST", "/feedback", map[string]any{"run_id": r, "key": "correctness", "score": tn.ExperimentScore}, 200, nil)
	}
	waitFor(t, "experiment statistics of "+tn.Name, func() bool {
		var ps []struct {
			FeedbackStats map[string]struct {
				N int `json:"n"`
			} `json:"feedback_stats"`
		}
		api(t, s.API, tn.Key, "GET", "/sessions?reference_dataset="+ds.ID+"&include_stats=true", nil, 200, &ps)
		return len(ps) == 1 && ps[0].FeedbackStats["correctness"].N == len(expRuns)
	})
	waitFor(t, "billing usage of "+tn.Name, func() bool {
		var usage []struct {
			Name  string `json:"billable_metric_name"`
			Value int    `json:"value"`
		}
		api(t, s.API, tn.Key, "GET", "/api/v1/orgs/current/billing/usage?"+usageRange(), nil, 200, &usage)
		for _, u := range usage {
			if u.Name == "traces" {
				return u.Value == tn.Traces
			}
		}
		return false
	})
}

func usageRange() string {
	now := time.Now().UTC()
	return "starting_on=" + now.AddDate(0, 0, -1).Format(time.DateOnly) + "&ending_before=" + now.AddDate(0, 0, 2).Format(time.DateOnly)
}

func promptManifest(system string) map[string]any {
	tmpl := func(cls string, vars []string, text string) map[string]any {
		return map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain", "prompts", "chat", cls}, "kwargs": map[string]any{
			"prompt": map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain", "prompts", "prompt", "PromptTemplate"},
				"kwargs": map[string]any{"input_variables": vars, "template": text, "template_format": "f-string"}}}}
	}
	return map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain", "prompts", "chat", "ChatPromptTemplate"},
		"kwargs": map[string]any{"input_variables": []string{"question"}, "messages": []any{
			tmpl("SystemMessagePromptTemplate", []string{}, system), tmpl("HumanMessagePromptTemplate", []string{"question"}, "{question}")}}}
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

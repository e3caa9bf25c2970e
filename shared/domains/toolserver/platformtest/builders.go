package platformtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Base is the time the builders count from.
var Base = time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)

// ID is a deterministic UUID for a name, so tests can predict ids.
func ID(name string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("platformtest:"+name)).String()
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// NewTenant returns an empty tenant with one workspace.
func NewTenant(workspaceID, workspaceName string) *Tenant {
	return &Tenant{
		WorkspaceID: workspaceID,
		Workspaces:  []map[string]any{{"id": workspaceID, "display_name": workspaceName}},
		Tags:        map[string]map[string]time.Time{},
		Commits:     map[string][]map[string]any{},
	}
}

// AddProject adds a tracing project (an experiment when datasetID is not
// empty) and returns its id.
func (t *Tenant) AddProject(name, datasetID string, extra map[string]any) string {
	id := ID(t.WorkspaceID + "/project/" + name)
	p := map[string]any{"id": id, "name": name, "tenant_id": t.WorkspaceID, "start_time": ts(Base),
		"reference_dataset_id": nil, "run_count": 0, "extra": map[string]any{"metadata": map[string]any{}}}
	if datasetID != "" {
		p["reference_dataset_id"] = datasetID
	}
	for k, v := range extra {
		p[k] = v
	}
	t.Projects = append(t.Projects, p)
	return id
}

// Message is a chat message in the OpenAI shape the runs carry.
func Message(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

// AddThread adds a conversation of turns LLM runs to a project: turn i
// carries the user message "<thread> user i: <filler>" in inputs.messages
// and answers "<thread> assistant i: <filler>" in outputs.choices, the
// thread id in metadata key thread_id. The runs are added newest first, so
// the tool must order them. It returns the messages in conversation order.
func (t *Tenant) AddThread(projectID, threadID string, turns, fill int) []map[string]any {
	var msgs []map[string]any
	var runs []map[string]any
	for i := 0; i < turns; i++ {
		user := Message("user", fmt.Sprintf("%s user %d: %s", threadID, i, strings.Repeat("q", fill)))
		asst := Message("assistant", fmt.Sprintf("%s assistant %d: %s", threadID, i, strings.Repeat("a", fill)))
		msgs = append(msgs, user, asst)
		id := ID(fmt.Sprintf("%s/thread/%s/%d", t.WorkspaceID, threadID, i))
		start := Base.Add(time.Duration(i) * time.Minute)
		runs = append(runs, map[string]any{
			"id": id, "name": "ChatOpenAI", "run_type": "llm", "trace_id": id, "parent_run_id": nil,
			"session_id": projectID, "start_time": ts(start), "end_time": ts(start.Add(time.Second)),
			"dotted_order": start.UTC().Format("20060102T150405000000Z") + id, "status": "success", "error": nil,
			"inputs":  map[string]any{"messages": []any{user}},
			"outputs": map[string]any{"choices": []any{map[string]any{"index": 0, "message": asst}}},
			"extra":   map[string]any{"metadata": map[string]any{"thread_id": threadID, "ls_provider": "openai"}},
			"tags":    []any{}, "total_tokens": 20 + i, "prompt_tokens": 10, "completion_tokens": 10 + i,
		})
	}
	for i := len(runs) - 1; i >= 0; i-- {
		t.Runs = append(t.Runs, runs[i])
	}
	return msgs
}

// AddTrace adds a trace to a project: a root chain run and children-1
// child runs (llm and tool alternately, every fifth one errored), each with
// inputs and outputs of about size characters. It returns the trace id.
func (t *Tenant) AddTrace(projectID, name string, children, size int, start time.Time) string {
	root := ID(t.WorkspaceID + "/trace/" + name)
	filler := strings.Repeat("x", size)
	for i := 0; i < children; i++ {
		id, parent, runType, runName := root, any(nil), "chain", name
		if i > 0 {
			id, parent = ID(fmt.Sprintf("%s/trace/%s/%d", t.WorkspaceID, name, i)), root
			runType, runName = "llm", fmt.Sprintf("step-%d", i)
			if i%2 == 0 {
				runType = "tool"
			}
		}
		st := start.Add(time.Duration(i) * time.Second)
		var errText any
		status := "success"
		if i > 0 && i%5 == 0 {
			errText, status = fmt.Sprintf("step %d failed", i), "error"
		}
		t.Runs = append(t.Runs, map[string]any{
			"id": id, "name": runName, "run_type": runType, "trace_id": root, "parent_run_id": parent,
			"session_id": projectID, "start_time": ts(st), "end_time": ts(st.Add(500 * time.Millisecond)),
			"dotted_order": st.UTC().Format("20060102T150405000000Z") + id, "status": status, "error": errText,
			"inputs":  map[string]any{"input": fmt.Sprintf("run %d of %s: %s", i, name, filler)},
			"outputs": map[string]any{"output": fmt.Sprintf("result %d: %s", i, filler)},
			"extra":   map[string]any{"metadata": map[string]any{"step": i}},
			"tags":    []any{"step"}, "total_tokens": 100, "total_cost": "0.0012",
		})
	}
	return root
}

// AddDataset adds a dataset and returns its id.
func (t *Tenant) AddDataset(name, dataType, description string, metadata map[string]any) string {
	id := ID(t.WorkspaceID + "/dataset/" + name)
	t.Datasets = append(t.Datasets, map[string]any{
		"id": id, "name": name, "description": description, "data_type": dataType,
		"created_at": ts(Base), "modified_at": ts(Base), "example_count": 0, "session_count": 0,
		"last_session_start_time": nil, "metadata": metadata,
		"inputs_schema_definition":  map[string]any{"type": "object"},
		"outputs_schema_definition": nil,
	})
	return id
}

// AddExample adds an example with its versions (oldest first) and
// returns its id.
func (t *Tenant) AddExample(datasetID, name string, versions ...ExampleVersion) string {
	id := ID(t.WorkspaceID + "/example/" + name)
	t.Examples = append(t.Examples, &Example{ID: id, DatasetID: datasetID, Versions: versions})
	for _, d := range t.Datasets {
		if d["id"] == datasetID {
			d["example_count"] = d["example_count"].(int) + 1
		}
	}
	return id
}

// TagVersion names the dataset's state at a time.
func (t *Tenant) TagVersion(datasetID, tag string, at time.Time) {
	if t.Tags[datasetID] == nil {
		t.Tags[datasetID] = map[string]time.Time{}
	}
	t.Tags[datasetID][tag] = at
}

// AddPrompt adds a prompt repository with one commit of a chat prompt
// (system template and a user question) and returns the commit hash.
func (t *Tenant) AddPrompt(handle, system string, public bool, updated time.Time) string {
	hash := strings.ReplaceAll(ID(t.WorkspaceID+"/commit/"+handle+system), "-", "")
	t.Repos = append(t.Repos, map[string]any{
		"repo_handle": handle, "description": "prompt " + handle, "id": ID(t.WorkspaceID + "/repo/" + handle),
		"tenant_id": t.WorkspaceID, "is_public": public, "is_archived": false, "tags": []any{"test"},
		"owner": "-", "full_name": handle, "num_likes": 1, "num_downloads": 2, "num_views": 3, "num_commits": 1,
		"created_at": ts(Base), "updated_at": ts(updated), "last_commit_hash": hash,
	})
	msg := func(class, template string, vars []any) map[string]any {
		return map[string]any{"lc": 1, "type": "constructor", "id": []any{"langchain", "prompts", "chat", class},
			"kwargs": map[string]any{"prompt": map[string]any{"lc": 1, "type": "constructor",
				"id":     []any{"langchain", "prompts", "prompt", "PromptTemplate"},
				"kwargs": map[string]any{"input_variables": vars, "template": template, "template_format": "f-string"}}}}
	}
	manifest := map[string]any{"lc": 1, "type": "constructor", "id": []any{"langchain", "prompts", "chat", "ChatPromptTemplate"},
		"kwargs": map[string]any{"input_variables": []any{"question"}, "messages": []any{
			msg("SystemMessagePromptTemplate", system, []any{}),
			msg("HumanMessagePromptTemplate", "{question}", []any{"question"}),
		}}}
	t.Commits[handle] = append([]map[string]any{{"commit_hash": hash, "manifest": manifest}}, t.Commits[handle]...)
	return hash
}

// AddUsage adds a billing metric for a period with values per workspace.
func (t *Tenant) AddUsage(metric string, periodStart time.Time, groups map[string]any) {
	t.Usage = append(t.Usage, map[string]any{
		"billable_metric_id": ID("metric/" + metric), "billable_metric_name": metric,
		"period_start": periodStart.UTC().Format(time.RFC3339), "period_end": periodStart.AddDate(0, 1, 0).UTC().Format(time.RFC3339),
		"groups": groups,
	})
}

package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentplane/agentplane/shared/domains/toolserver/charpages"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names, in the original server's registration order.
const (
	ToolListPrompts      = "list_prompts"
	ToolGetPromptByName  = "get_prompt_by_name"
	ToolPushPrompt       = "push_prompt"
	ToolGetThreadHistory = "get_thread_history"
	ToolFetchRuns        = "fetch_runs"
	ToolListProjects     = "list_projects"
	ToolGetBillingUsage  = "get_billing_usage"
	ToolListExperiments  = "list_experiments"
	ToolListDatasets     = "list_datasets"
	ToolListExamples     = "list_examples"
	ToolReadDataset      = "read_dataset"
	ToolReadExample      = "read_example"
	ToolCreateDataset    = "create_dataset"
	ToolUpdateExamples   = "update_examples"
	ToolRunExperiment    = "run_experiment"
)

// ToolNames lists the 15 tools in registration order.
var ToolNames = []string{
	ToolListPrompts, ToolGetPromptByName, ToolPushPrompt, ToolGetThreadHistory, ToolFetchRuns,
	ToolListProjects, ToolGetBillingUsage, ToolListExperiments, ToolListDatasets, ToolListExamples,
	ToolReadDataset, ToolReadExample, ToolCreateDataset, ToolUpdateExamples, ToolRunExperiment,
}

// Schema builders. Optional parameters without a default accept null (the
// original's Optional[...] = None); defaults are in the schema, so clients
// see them and the SDK applies them before a handler runs.

type prop struct {
	name   string
	schema *jsonschema.Schema
}

func rawDefault(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func reqString(name, desc string) prop {
	return prop{name, &jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1), Description: desc}}
}

func optString(name, desc string) prop {
	return prop{name, &jsonschema.Schema{Types: []string{"string", "null"}, Default: rawDefault(nil), Description: desc}}
}

func boolString(name, desc, def string) prop {
	return prop{name, &jsonschema.Schema{Type: "string", Default: rawDefault(def), Description: desc + ` "true" or "false" (default "` + def + `").`}}
}

func optBoolString(name, desc string) prop {
	return prop{name, &jsonschema.Schema{Types: []string{"string", "null"}, Default: rawDefault(nil), Description: desc + ` "true" or "false"; anything else (or null) means no filter.`}}
}

func defString(name, desc, def string) prop {
	return prop{name, &jsonschema.Schema{Type: "string", Default: rawDefault(def), Description: desc}}
}

func reqInt(name, desc string, minimum *float64) prop {
	return prop{name, &jsonschema.Schema{Type: "integer", Minimum: minimum, Description: desc}}
}

func defInt(name, desc string, def int, minimum float64) prop {
	return prop{name, &jsonschema.Schema{Type: "integer", Default: rawDefault(def), Minimum: jsonschema.Ptr(minimum), Description: desc}}
}

func object(required []string, props ...prop) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, Required: required}
	for _, p := range props {
		s.Properties[p.name] = p.schema
		s.PropertyOrder = append(s.PropertyOrder, p.name)
	}
	return s
}

var paginationProps = []prop{
	defInt("max_chars_per_page", "Character budget of one page (default 25000, capped at 30000).", charpages.DefaultMaxChars, 1),
	defInt("preview_chars", "Strings longer than this many characters are cut and marked \"… (+N chars)\" with the number of characters removed; 0 keeps strings whole (default 150).", charpages.DefaultPreviewChars, 0),
}

// toolResult is the answer of a tool that succeeded: an object, carried as
// structuredContent and as its JSON text. A rawResult is that object
// already encoded (the paginated answers, assembled from their encoded
// items without another encoding pass).
type toolResult = any

type rawResult []byte

// runFunc is a tool body: the platform client of this call and the
// decoded, defaulted arguments.
type runFunc[In any] func(ctx context.Context, p *platform, in In) (toolResult, error)

// errorResult is a failed tool call: isError, with the original server's
// {"error": "..."} shape as text and structured content.
func errorResult(err error) *mcp.CallToolResult {
	body := map[string]string{"error": err.Error()}
	b, _ := json.Marshal(body)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(true)}

// decodeArgs applies the schema's defaults to the call's arguments,
// validates them, and decodes them into In: what the SDK's typed tools do,
// done here so the answer can be encoded once.
func decodeArgs[In any](resolved *jsonschema.Resolved, raw json.RawMessage) (In, error) {
	var in In
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return in, fmt.Errorf("arguments must be a JSON object: %v", err)
		}
		if m == nil {
			m = map[string]any{}
		}
	}
	var v any = m
	if err := resolved.ApplyDefaults(&v); err != nil {
		return in, err
	}
	if err := resolved.Validate(&v); err != nil {
		return in, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return in, err
	}
	err = json.Unmarshal(b, &in)
	return in, err
}

// addPlatformTool registers a tool that calls the platform: each call gets
// its credentials from creds, its own platform client and a deadline.
func addPlatformTool[In any](s *Service, srv *mcp.Server, creds func(*mcp.CallToolRequest) Credentials, name, title, desc string, schema *jsonschema.Schema, run runFunc[In]) {
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("toolserver: schema of %s: %v", name, err)) // a programming error, caught by every test
	}
	tool := &mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: schema, Annotations: readOnly}
	srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, err := decodeArgs[In](resolved, req.Params.Arguments)
		if err != nil {
			return errorResult(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		p, err := s.platformFor(creds(req))
		if err != nil {
			return errorResult(err), nil
		}
		ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
		defer cancel()
		out, err := run(ctx, p, in)
		if err != nil {
			var pe *PlatformError
			level := slog.LevelInfo
			if errors.As(err, &pe) && pe.Status >= 500 {
				level = slog.LevelWarn
			}
			s.log.Log(ctx, level, "tool call failed", slog.String("tool", name), slog.String("endpoint_host", p.host), slog.String("error", err.Error()))
			return errorResult(err), nil
		}
		b, ok := out.(rawResult)
		if !ok {
			if b, err = json.Marshal(out); err != nil {
				return errorResult(err), nil
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
	})
}

// addDocTool registers a documentation-only tool: no parameters, no
// platform call, a markdown answer naming the caller's endpoint.
func addDocTool(s *Service, srv *mcp.Server, creds func(*mcp.CallToolRequest) Credentials, name, title, desc, body string) {
	tool := &mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: object(nil), Annotations: readOnly}
	mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s.renderGuide(body, creds(req))}}}, nil, nil
	})
}

func (s *Service) registerTools(srv *mcp.Server, creds func(*mcp.CallToolRequest) Credentials) {
	addPlatformTool(s, srv, creds, ToolListPrompts, "List prompts",
		`Fetch prompts (prompt repositories) of the workspace, most recently updated first.

Returns {"prompts": [{"repo_handle", "description", "id", "is_public", "tags", "owner", "full_name", "num_likes", "num_downloads", "num_views", "created_at", "updated_at"}], "total_count": n}.`,
		object(nil,
			boolString("is_public", "Visibility filter: \"true\" for public prompts, \"false\" for private ones.", "false"),
			defInt("limit", "Maximum number of prompts to return (default 20, at most 1000).", 20, 1),
		), s.listPrompts)

	addPlatformTool(s, srv, creds, ToolGetPromptByName, "Get a prompt by name",
		`Get one prompt by its exact name: its details and template at the latest commit, or at a given one.

prompt_name is "name", "owner/name", or either followed by ":<commit hash>". Returns the prompt object (input_variables, messages or template, ...) with metadata lc_hub_owner, lc_hub_repo and lc_hub_commit_hash; each object that was a serialized LangChain class carries its class name in "_type".`,
		object([]string{"prompt_name"},
			reqString("prompt_name", "The exact name of the prompt: \"name\", \"owner/name\", optionally with \":<commit hash>\"."),
		), s.getPromptByName)

	addDocTool(s, srv, creds, ToolPushPrompt, "How to push a prompt",
		"Documentation only: how to create a prompt and push new versions of it to this platform (REST paths and bodies, and the SDK calls). Takes no parameters and makes no changes.",
		guidePushPrompt)

	addPlatformTool(s, srv, creds, ToolGetThreadHistory, "Get thread history",
		`Message history of a conversation thread, oldest first, paginated by characters.

The thread is found by the run metadata keys session_id, conversation_id or thread_id of the project's LLM runs; its 100 most recent LLM runs are read. Call with page_number 1, then 2, 3, ... up to total_pages; the pages, concatenated, hold every message once. Returns {"result": [messages], "page_number", "total_pages", "max_chars_per_page", "preview_chars"}, plus "_truncated": true and "_truncated_message" when a single message larger than the page budget was cut further.`,
		object([]string{"thread_id", "project_name", "page_number"}, append([]prop{
			reqString("thread_id", "The id of the thread (its session_id, conversation_id or thread_id metadata value)."),
			reqString("project_name", "The name of the project (tracing project) holding the thread's runs."),
			reqInt("page_number", "The page to return, from 1 to total_pages (pages outside that range are empty).", nil),
		}, paginationProps...)...), s.getThreadHistory)

	addPlatformTool(s, srv, creds, ToolFetchRuns, "Fetch runs",
		`Fetch runs (LLM calls, chains, tools, retrievers, ...) from one or more projects, with filters.

With trace_id, the runs of that trace (up to limit) are paginated by characters: call page_number 1, 2, ... up to total_pages; the pages, concatenated, hold every run once. Without trace_id, one batch of up to limit runs is returned as page 1 of 1. Strings longer than preview_chars are cut in both cases. Returns {"runs": [...], "page_number", "total_pages", "max_chars_per_page", "preview_chars"} (plus "_truncated" and "_truncated_message" when a single run larger than the page budget was cut further).

Filter language examples (filter, trace_filter, tree_filter): gt(latency, "5s"), neq(error, null), has(tags, "beta"), eq(name, "ChatOpenAI"), and(eq(run_type, "llm"), gt(total_tokens, 1000)), search("text"), and(eq(feedback_key, "user_score"), eq(feedback_score, 1)).`,
		object([]string{"project_name", "limit", "page_number"}, append([]prop{
			reqString("project_name", "The project name, or several as a JSON array string such as '[\"p1\",\"p2\"]'."),
			reqInt("limit", "Maximum number of runs to fetch (capped at 100).", jsonschema.Ptr(1.0)),
			reqInt("page_number", "The page to return, from 1 (with trace_id: up to total_pages; without: only 1).", nil),
			optString("trace_id", "Only the runs of this trace; turns on character pagination."),
			optString("run_type", "Only runs of this type: llm, chain, tool, retriever, embedding, prompt or parser."),
			optBoolString("error", "\"true\" for errored runs only, \"false\" for successful runs only."),
			optBoolString("is_root", "\"true\" for root runs only, \"false\" to exclude root runs."),
			optString("filter", "Filter-language expression over the runs."),
			optString("trace_filter", "Filter-language expression over the root run of each trace."),
			optString("tree_filter", "Filter-language expression over any run of the trace tree."),
			defString("order_by", "Order by start time: \"-start_time\" (newest first, default) or \"start_time\" (oldest first).", "-start_time"),
			optString("reference_example_id", "Only runs made against this dataset example."),
		}, paginationProps...)...), s.fetchRuns)

	addPlatformTool(s, srv, creds, ToolListProjects, "List projects",
		`List tracing projects, optionally filtered by name or by reference dataset.

Returns {"projects": [{"name", "project_id", "agent_deployment_id"?}]}, or the full project objects with more_info "true".`,
		object(nil,
			defInt("limit", "Maximum number of projects to return (default 5, at most 1000).", 5, 1),
			optString("project_name", "Only projects whose name contains this text."),
			boolString("more_info", "\"true\" returns the full project objects.", "false"),
			optString("reference_dataset_id", "Only projects (experiments) run against this dataset id."),
			optString("reference_dataset_name", "Only projects (experiments) run against the dataset of this name."),
		), s.listProjects)

	addPlatformTool(s, srv, creds, ToolGetBillingUsage, "Get billing usage",
		`Organization billing usage (for example trace counts) for a date range, per workspace.

Returns {"usage": [metric objects]} where each metric's "groups" maps a workspace id to {"workspace_name", "value"}; with workspace, only that workspace's entries are kept.`,
		object([]string{"starting_on", "ending_before"},
			reqString("starting_on", "Start of the range, ISO 8601 (e.g. 2025-09-01T00:00:00Z)."),
			reqString("ending_before", "End of the range (exclusive), ISO 8601 (e.g. 2025-10-01T00:00:00Z)."),
			optString("workspace", "Only this workspace: its id or its display name."),
			boolString("on_current_plan", "\"true\" counts only usage on the current plan.", "true"),
		), s.getBillingUsage)

	addPlatformTool(s, srv, creds, ToolListExperiments, "List experiments",
		`Experiment projects run against a dataset, with latency, cost and feedback metrics. Exactly one of reference_dataset_id and reference_dataset_name is required.

Returns {"experiments": [{"name", "experiment_id", "feedback_stats", "latency_p50_seconds"?, "latency_p99_seconds"?, "total_cost"?, "prompt_cost"?, "completion_cost"?, "agent_deployment_id"?}]}.`,
		object(nil,
			optString("reference_dataset_id", "The dataset id (this or reference_dataset_name)."),
			optString("reference_dataset_name", "The dataset name (this or reference_dataset_id)."),
			defInt("limit", "Maximum number of experiments to return (default 5, at most 1000).", 5, 1),
			optString("project_name", "Only experiments whose name contains this text."),
		), s.listExperiments)

	addPlatformTool(s, srv, creds, ToolListDatasets, "List datasets",
		`List datasets, filtered by id, type, name or metadata.

Returns {"datasets": [{"id", "name", "inputs_schema_definition", "outputs_schema_definition", "description", "data_type", "example_count", "session_count", "created_at", "modified_at", "last_session_start_time"}], "total_count": n}.`,
		object(nil,
			optString("dataset_ids", "Dataset ids: a JSON array string or a single id."),
			optString("data_type", "Dataset type: kv, llm or chat."),
			optString("dataset_name", "Exact dataset name."),
			optString("dataset_name_contains", "Text the dataset name contains."),
			optString("metadata", "Metadata filter: a JSON object string such as '{\"key\": \"value\"}'."),
			defInt("limit", "Maximum number of datasets to return (default 20, at most 1000).", 20, 1),
		), s.listDatasets)

	addPlatformTool(s, srv, creds, ToolListExamples, "List examples",
		`List the examples of a dataset (by id or name) or specific examples by id, optionally at a past version (as_of). One of example_ids, dataset_id or dataset_name is required; that is also their precedence.

Returns {"examples": [{"id", "dataset_id", "inputs", "outputs", "metadata", "created_at", "modified_at", "runs", "source_run_id", "attachments"}], "total_count": n}.`,
		object(nil,
			optString("dataset_id", "The dataset id."),
			optString("dataset_name", "The dataset name."),
			optString("example_ids", "Example ids: a JSON array string or a single id."),
			optString("filter", "Filter-language expression over examples, e.g. has(metadata, '{\"key\": \"value\"}')."),
			optString("metadata", "Metadata filter: a JSON object string."),
			optString("splits", "Dataset splits: a JSON array string or a single split name."),
			optBoolString("inline_s3_urls", "Inline attachment URLs (default \"true\")."),
			optBoolString("include_attachments", "Include attachments (default \"false\")."),
			optString("as_of", "A version tag or an ISO 8601 timestamp: the examples as they were then."),
			defInt("limit", "Maximum number of examples to return (default 10, at most 1000).", 10, 1),
			optString("offset", "Number of examples to skip, as a string (default \"0\")."),
		), s.listExamples)

	addPlatformTool(s, srv, creds, ToolReadDataset, "Read a dataset",
		`Read one dataset by id or by name (the id wins when both are given).

Returns {"dataset": {"id", "name", "inputs_schema_definition", "outputs_schema_definition", "description", "data_type", "example_count", "session_count", "created_at", "modified_at", "last_session_start_time"}}.`,
		object(nil,
			optString("dataset_id", "The dataset id."),
			optString("dataset_name", "The dataset name."),
		), s.readDataset)

	addPlatformTool(s, srv, creds, ToolReadExample, "Read an example",
		`Read one example by id, optionally as it was at a version (as_of).

Returns {"example": {"id", "dataset_id", "inputs", "outputs", "metadata", "created_at", "modified_at", "runs", "source_run_id", "attachments"}}.`,
		object([]string{"example_id"},
			reqString("example_id", "The example id."),
			optString("as_of", "A version tag or an ISO 8601 timestamp."),
		), s.readExample)

	addDocTool(s, srv, creds, ToolCreateDataset, "How to create a dataset",
		"Documentation only: how to create a dataset and add examples on this platform (REST paths and bodies, and the SDK calls). Takes no parameters and makes no changes.",
		guideCreateDataset)
	addDocTool(s, srv, creds, ToolUpdateExamples, "How to update examples",
		"Documentation only: how to update one or many dataset examples on this platform (REST paths and bodies, and the SDK calls). Takes no parameters and makes no changes.",
		guideUpdateExamples)
	addDocTool(s, srv, creds, ToolRunExperiment, "How to run an experiment",
		"Documentation only: how to run an experiment (evaluate a target over a dataset) against this platform, and how its results are stored. Takes no parameters and makes no changes.",
		guideRunExperiment)
}

package tracing

import (
	"encoding/json"
	"time"
)

// RunTypes are the run types a run may have.
var RunTypes = []string{"tool", "chain", "llm", "retriever", "embedding", "prompt", "parser"}

func validRunType(t string) bool {
	for _, x := range RunTypes {
		if x == t {
			return true
		}
	}
	return false
}

// blobRef locates a large field: N bytes at offset O of the blob K.
type blobRef struct {
	K string `json:"k"`
	O int64  `json:"o"`
	N int64  `json:"n"`
}

// attachment is a file attached to a run (stored as its own blob).
type attachment struct {
	Key         string `json:"key"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// runFeedback is what a run keeps of each feedback on it (what filters on
// feedback_key/feedback_score and its feedback_stats read).
type runFeedback struct {
	ID    string   `json:"id"`
	Key   string   `json:"key"`
	Score *float64 `json:"score,omitempty"`
}

// runRecord is the stored run: every field a query filters on or returns,
// with the large fields (inputs, outputs, events, serialized, attachments)
// as references into blob storage.
type runRecord struct {
	ID          string `json:"id"`
	TraceID     string `json:"trace_id,omitempty"`
	ParentRunID string `json:"parent_run_id,omitempty"`
	DottedOrder string `json:"dotted_order,omitempty"`
	// DottedParent is set while the dotted order starts below the root:
	// it names the run whose stored order must be prefixed to it (see
	// completeDotted).
	DottedParent string    `json:"dotted_parent,omitempty"`
	Name         string    `json:"name,omitempty"`
	RunType      string    `json:"run_type,omitempty"`
	StartTime    time.Time `json:"start_time,omitzero"`
	EndTime      time.Time `json:"end_time,omitzero"`
	// SessionID is the project; empty while the run is partial (an update
	// seen before its create, without a project).
	SessionID string `json:"session_id,omitempty"`
	// SessionName is the project name an update asked for while the run
	// was partial.
	SessionName        string                     `json:"session_name,omitempty"`
	Error              string                     `json:"error,omitempty"`
	HasError           bool                       `json:"has_error,omitempty"`
	Status             string                     `json:"status,omitempty"`
	Tags               []string                   `json:"tags,omitempty"`
	Extra              map[string]json.RawMessage `json:"extra,omitempty"` // without metadata
	Metadata           map[string]json.RawMessage `json:"metadata,omitempty"`
	ReferenceExampleID string                     `json:"reference_example_id,omitempty"`
	ThreadID           string                     `json:"thread_id,omitempty"`
	PromptTokens       int64                      `json:"prompt_tokens,omitempty"`
	CompletionTokens   int64                      `json:"completion_tokens,omitempty"`
	TotalTokens        int64                      `json:"total_tokens,omitempty"`
	// Costs in nano-dollars.
	PromptCost     int64                 `json:"prompt_cost,omitempty"`
	CompletionCost int64                 `json:"completion_cost,omitempty"`
	TotalCost      int64                 `json:"total_cost,omitempty"`
	HasCost        bool                  `json:"has_cost,omitempty"`
	FirstTokenTime time.Time             `json:"first_token_time,omitzero"`
	Inputs         *blobRef              `json:"inputs,omitempty"`
	Outputs        *blobRef              `json:"outputs,omitempty"`
	Events         *blobRef              `json:"events,omitempty"`
	Serialized     *blobRef              `json:"serialized,omitempty"`
	Attachments    map[string]attachment `json:"attachments,omitempty"`
	Feedback       []runFeedback         `json:"feedback,omitempty"`
	// Bookkeeping.
	FirstSeen time.Time `json:"first_seen"`
	ExpiresAt time.Time `json:"expires_at"`
	// Facets are the facet entries written for this run.
	Facets []string `json:"facets,omitempty"`
	// Counted is what this run has added to its project's statistics;
	// the next write adds the difference, so every change counts once.
	Counted contrib `json:"counted,omitzero"`
	// ThreadCounted is what it has added to its thread's summary.
	ThreadCounted threadContrib `json:"thread_counted,omitzero"`
}

// complete reports whether the run can be served: it has a project, a
// name, a type, a start time and a trace.
func (r *runRecord) complete() bool {
	return r.SessionID != "" && r.Name != "" && r.RunType != "" && !r.StartTime.IsZero() && r.TraceID != ""
}

func (r *runRecord) isRoot() bool { return r.ParentRunID == "" }

func (r *runRecord) sortKey() string { return runSortKey(r.StartTime, r.ID) }

// contrib is a run's share of its project's statistics.
type contrib struct {
	Project string `json:"p,omitempty"`
	Runs    int64  `json:"runs,omitempty"`
	Roots   int64  `json:"roots,omitempty"`
	Errors  int64  `json:"errors,omitempty"`
	// RootErrors counts errored root runs (the error rate's numerator).
	RootErrors int64 `json:"root_errors,omitempty"`
	// Latency and FirstToken are 1 + the histogram bucket of a finished
	// root run's latency and time to first token (0 for none).
	Latency          int   `json:"lat,omitempty"`
	FirstToken       int   `json:"ft,omitempty"`
	PromptTokens     int64 `json:"pt,omitempty"`
	CompletionTokens int64 `json:"ct,omitempty"`
	TotalTokens      int64 `json:"tt,omitempty"`
	PromptCost       int64 `json:"pc,omitempty"`
	CompletionCost   int64 `json:"cc,omitempty"`
	TotalCost        int64 `json:"tc,omitempty"`
	// Feedback holds, per key, the count, the count with a score and the
	// sum of scores (in units of 1/scoreScale).
	Feedback map[string][3]int64 `json:"fb,omitempty"`
}

// threadContrib is a run's share of its thread's summary.
type threadContrib struct {
	Thread string `json:"th,omitempty"`
	Runs   int64  `json:"runs,omitempty"`
	Roots  int64  `json:"roots,omitempty"`
	Tokens int64  `json:"tok,omitempty"`
}

// scoreScale is the fixed-point scale of feedback score sums (the SDKs
// round scores to 4 decimal places).
const scoreScale = 10000

// costScale: costs are kept in nano-dollars.
const costScale = 1e9

// projectRecord is a stored project (a tracing session).
type projectRecord struct {
	ID                 string                     `json:"id"`
	WorkspaceID        string                     `json:"tenant_id"`
	Name               string                     `json:"name"`
	Description        *string                    `json:"description"`
	StartTime          time.Time                  `json:"start_time"`
	EndTime            *time.Time                 `json:"end_time"`
	Extra              map[string]json.RawMessage `json:"extra,omitempty"`
	ReferenceDatasetID *string                    `json:"reference_dataset_id"`
	DefaultDatasetID   *string                    `json:"default_dataset_id"`
	RetentionDays      int                        `json:"retention_days"`
	// PendingEvent is a tracing.experiment event not yet published (the
	// sweep publishes it if the request that made it could not).
	PendingEvent *ExperimentEvent `json:"pending_event,omitempty"`
	// Deleted is set while the project's runs are being purged.
	Deleted bool `json:"deleted,omitempty"`
}

// threadRecord summarizes one thread of a project.
type threadRecord struct {
	ThreadID   string    `json:"thread_id"`
	FirstStart time.Time `json:"first_start_time"`
	LastStart  time.Time `json:"last_start_time"`
	LastRunID  string    `json:"last_run_id"`
}

// feedbackRecord is a stored feedback: its API shape (Feedback) and what
// the statistics need.
type feedbackRecord struct {
	Feedback
	// Counted is the project whose statistics count this feedback ("" while
	// its run is unknown, or for run-level feedback counted through the run).
	Counted string `json:"counted,omitempty"`
}

package ratelimits_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

const uuid1 = "0f8fad5b-d9cb-469f-a165-70867728950e"

var (
	key  = ratelimits.Presence{Key: true}
	user = ratelimits.Presence{User: true}
	both = ratelimits.Presence{Key: true, User: true}
	anon = ratelimits.Presence{}
)

func TestSelect(t *testing.T) {
	cases := []struct {
		method, path string
		p            ratelimits.Presence
		seq          int
	}{
		// IP rows apply to every request, keyed or not.
		{"OPTIONS", "/runs/query", anon, 1},
		{"OPTIONS", "/runs/query", key, 1},
		{"GET", "/info", anon, 1},
		{"GET", "/info", key, 1},
		{"GET", "/api/v1/info", key, 1},
		{"POST", "/api/v1/metadata/submit", anon, 1},
		{"POST", "/x/v1/metadata/submit", anon, 1},
		{"GET", "/info/x", anon, 29}, // /info is one endpoint
		{"POST", "/auth", key, 2},
		{"POST", "/auth/verify", key, 2},
		{"POST", "/auth", user, 3},
		{"POST", "/authx", key, 25}, // prefixes end at a segment
		{"POST", "/auth", anon, 29},
		{"GET", "/v1/beacon/x", anon, 4},
		{"GET", "/repos/owner/name", key, 5},
		{"GET", "/api/v1/repos", user, 6},
		{"GET", "/repository", key, 25},
		{"POST", "/runs/batch", key, 7},
		{"POST", "/api/v1/runs/batch", key, 7},
		{"GET", "/runs/batch", key, 25},
		{"POST", "/runs/batch", user, 26},
		{"POST", "/otel/v1/traces", key, 8},
		{"POST", "/sessions/abc/charts", key, 9},
		{"POST", "/charts", user, 10},
		{"GET", "/charts", key, 25},
		{"POST", "/runs/multipart", key, 11},
		{"POST", "/runs/query", key, 12},
		{"POST", "/runs/query", user, 13},
		{"POST", "/runs/query", both, 12}, // the key row comes first in the table
		{"POST", "/api/v1/runs/query", key, 12},
		{"GET", "/generate/x", key, 14},
		{"GET", "/generate", user, 15},
		{"POST", "/commits/o/r", key, 16},
		{"POST", "/commits/o/r", user, 17},
		{"DELETE", "/sessions", key, 18},
		{"DELETE", "/sessions/" + uuid1, key, 18},
		{"GET", "/sessions/" + uuid1, key, 25},
		{"POST", "/workflows/x/trigger", key, 18},
		{"POST", "/trigger", user, 19},
		{"POST", "/runs", key, 20},
		{"POST", "/api/v1/runs", key, 20},
		{"POST", "/runs/", key, 25},
		{"PATCH", "/runs/" + uuid1, key, 21},
		{"PATCH", "/threads/t/runs/r", key, 21},
		{"POST", "/feedback", key, 22},
		{"GET", "/runs/" + uuid1, key, 23},
		{"HEAD", "/runs/" + uuid1, key, 23},
		{"GET", "/api/v1/runs/" + uuid1, key, 23},
		{"GET", "/runs/" + "0F8FAD5B-D9CB-469F-A165-70867728950E", key, 23},
		{"GET", "/runs/not-a-uuid", key, 25},
		{"GET", "/runs/" + uuid1, user, 26}, // no user row for lookups
		{"GET", "/datasets/d/examples", key, 24},
		{"POST", "/datasets/d/examples", key, 25},
		{"GET", "/v2/deployments", key, 25},
		{"GET", "/v2/deployments", user, 26},
		{"GET", "/v2/deployments", anon, 29},
		{"GET", "/public/download", anon, 27},
		{"GET", "/public/download/abc", key, 27},
		{"POST", "/runs/stats", key, 28},
		{"PATCH", "/runs/stats", key, 28}, // exact beats PATCH-containing
		{"POST", "/api/v1/runs/stats", key, 28},
		{"POST", "/runs/stats", user, 26},
		{"GET", "/nothing/here", anon, 29},
		{"GET", "/api/v1", key, 25},
	}
	for _, c := range cases {
		if got := ratelimits.Select(c.method, c.path, c.p).Seq; got != c.seq {
			t.Errorf("%s %s %+v: row %d, want %d", c.method, c.path, c.p, got, c.seq)
		}
	}
}

func TestCategory(t *testing.T) {
	cases := []struct{ method, pattern, want string }{
		{"GET", "/runs/{run_id}", "Run lookup"},
		{"GET", "/api/v1/runs/{run_id}", "Run lookup"},
		{"PATCH", "/runs/{run_id}", "Run ingest"},
		{"POST", "/runs", "Run ingest"},
		{"POST", "/runs/batch", "High throughput"},
		{"POST", "/runs/multipart", "Multipart ingest"},
		{"POST", "/runs/query", "Run query (API)"},
		{"POST", "/runs/stats", "Stats"},
		{"POST", "/otel/v1/traces", "Run ingest"},
		{"POST", "/feedback", "High throughput"},
		{"GET", "/info", "High throughput"},
		{"DELETE", "/sessions/{session_id}", "Deletion"},
		{"POST", "/workflows/{id}/trigger", "Deletion"},
		{"GET", "/datasets/{dataset_id}/examples", "Examples"},
		{"POST", "/sessions/{id}/charts", "Charts"},
		{"GET", "/repos/{owner}/{repo}", "Repository"},
		{"GET", "/commits/{owner}/{repo}", "Commits"},
		{"GET", "/v2/deployments", ""},
		{"POST", "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", ""},
		{"GET", "/public/download/{token}", "Public download"},
		{"GET", "/runs/{run_id}/share", ""},
	}
	for _, c := range cases {
		if got := ratelimits.Category(c.method, c.pattern); got != c.want {
			t.Errorf("Category(%s, %s) = %q, want %q", c.method, c.pattern, got, c.want)
		}
	}
}

// A row's own path (with a sample for its template) selects it.
func TestEveryRowSelectable(t *testing.T) {
	for _, r := range ratelimits.Rows() {
		req := sampleFor(r)
		if got := ratelimits.Select(req.method, req.path, req.presence()).Seq; got != r.Seq {
			t.Errorf("row %d: its sample %s %s selects row %d", r.Seq, req.method, req.path, got)
		}
	}
}

// sample is a request that selects one row.
type sample struct {
	method, path string
	key, user    string
}

func (s sample) presence() ratelimits.Presence {
	return ratelimits.Presence{Key: s.key != "", User: s.user != ""}
}

func sampleFor(r ratelimits.Row) sample {
	s := sample{method: "GET", path: "/v2/anything"}
	if len(r.Matches) > 0 {
		m := r.Matches[0]
		if m.Method != "" {
			s.method = m.Method
		}
		switch m.Kind {
		case ratelimits.Exact, ratelimits.Prefix:
			s.path = m.Path
		case ratelimits.Template:
			s.path = "/runs/" + uuid1
		case ratelimits.Contains:
			s.path = "/things/t" + m.Path + "/x"
		case ratelimits.Suffix:
			s.path = "/things/t" + m.Path
		}
	}
	switch r.Identity {
	case ratelimits.ByAPIKey:
		s.key = "key-of-row"
	case ratelimits.ByUserIP:
		s.user = "user-of-row"
	}
	return s
}

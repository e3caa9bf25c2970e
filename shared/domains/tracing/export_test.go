package tracing

import (
	"context"
	"encoding/json"
)

// Hooks for the external tests: the query as the HTTP layer reads it, with
// its plan and cost, and the OTLP decoder.

// QueryCost runs a /runs/query body and returns the ids it selects, the
// index it chose and the items it read.
func (s *Service) QueryCost(ctx context.Context, ws string, body map[string]any) ([]string, string, int, error) {
	raw, _ := json.Marshal(body)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	q, _, err := parseRunQuery(m, false)
	if err != nil {
		return nil, "", 0, err
	}
	runs, _, st, err := s.queryRuns(ctx, ws, q)
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids, st.Plan, st.ItemsRead, err
}

// SetOTLPDecoder replaces the OTLP decoder for a test, returning a func
// that restores it.
func SetOTLPDecoder(f func(string, []byte) ([]map[string]any, error)) func() {
	old := decodeOTLP
	decodeOTLP = f
	return func() { decodeOTLP = old }
}

// ApplyStored applies a stored batch (what the consumer does).
func (s *Service) ApplyStored(ctx context.Context, key string) error { return s.applyStored(ctx, key) }

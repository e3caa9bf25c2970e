package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/billing"
)

// FuzzConsume: any payload is either recorded or refused with
// ErrInvalidEvent; nothing panics.
func FuzzConsume(f *testing.F) {
	e := newEnv(f)
	good, _ := json.Marshal(e.event(e.ws, 2))
	f.Add(good)
	f.Add([]byte(`{"id":"x","organization_id":"` + e.org + `","workspace_id":"` + e.ws + `","metric":"traces","quantity":1e3,"at":"2025-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"id":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, payload []byte) {
		err := e.svc.Consume(context.Background(), payload)
		if err != nil && !errors.Is(err, billing.ErrInvalidEvent) {
			t.Fatalf("%q: %v", payload, err)
		}
	})
}

// FuzzUsageQuery: no query string gets a server error.
func FuzzUsageQuery(f *testing.F) {
	e := newEnv(f)
	h := e.srv.Config.Handler
	f.Add("starting_on=2025-09-01&ending_before=2025-10-01")
	f.Add("starting_on=2025-09-01T00:00:00+02:00&ending_before=2025-10-01T00:00:00.5Z&on_current_plan=False")
	f.Add("starting_on=&ending_before=2025")
	f.Add("starting_on=2025-09-01%20&ending_before=9999-12-31")
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+billing.UsagePath, nil)
		req.URL.RawQuery = query
		req.Header.Set("X-Api-Key", adminKey)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: %d %s", query, rec.Code, rec.Body)
		}
	})
}

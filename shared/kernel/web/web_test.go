package web_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

type body struct {
	Name   string `json:"name"`
	Count  int    `json:"count"`
	Nested struct {
		Flag bool `json:"flag"`
	} `json:"nested"`
}

func decodeStatus(t *testing.T, payload string) (int, map[string]any) {
	t.Helper()
	h := web.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		var b body
		if err := web.DecodeJSON(r, &b, false); err != nil {
			return err
		}
		web.WriteJSON(w, http.StatusOK, b)
		return nil
	})
	srv := httptest.NewServer(web.Chain(h, web.Observe(slog.New(slog.NewJSONHandler(io.Discard, nil))), web.MaxBody(1024)))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get(web.RequestIDHeader) == "" {
		t.Error("missing X-Request-Id")
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	return resp.StatusCode, out
}

func firstLoc(t *testing.T, out map[string]any) []any {
	t.Helper()
	list, ok := out["detail"].([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("detail is not a validation list: %v", out)
	}
	e := list[0].(map[string]any)
	for _, k := range []string{"loc", "msg", "type"} {
		if _, ok := e[k]; !ok {
			t.Fatalf("validation error lacks %s: %v", k, e)
		}
	}
	return e["loc"].([]any)
}

func TestDecodeJSON(t *testing.T) {
	cases := []struct {
		name    string
		payload string
		status  int
		loc     string
	}{
		{"ok", `{"name":"a","count":2,"nested":{"flag":true}}`, 200, ""},
		{"wrong type", `{"name":5}`, 422, `["body","name"]`},
		{"nested wrong type", `{"nested":{"flag":"yes"}}`, 422, `["body","nested","flag"]`},
		{"unknown field", `{"name":"a","extra":1}`, 422, `["body","extra"]`},
		{"malformed", `{"name":`, 422, `["body",8]`},
		{"syntax", `{"name" "a"}`, 422, `["body",9]`},
		{"trailing", `{"name":"a"} {}`, 422, `["body"]`},
		{"empty", ``, 422, `["body"]`},
		{"null", `null`, 422, `["body"]`},
		{"null with spaces", " null\n", 422, `["body"]`},
		{"too large", `{"name":"` + strings.Repeat("x", 2000) + `"}`, 413, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, out := decodeStatus(t, c.payload)
			if status != c.status {
				t.Fatalf("status %d, want %d (%v)", status, c.status, out)
			}
			if c.loc != "" {
				got, _ := json.Marshal(firstLoc(t, out))
				if string(got) != c.loc {
					t.Fatalf("loc %s, want %s", got, c.loc)
				}
			}
			if c.status == 413 {
				if _, ok := out["detail"].(string); !ok {
					t.Fatalf("413 detail should be a string: %v", out)
				}
			}
		})
	}
}

func TestMuxNotFoundMethodNotAllowedAndPanic(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET", "/things/{id}", func(w http.ResponseWriter, r *http.Request) error {
		id, err := web.PathUUID(r, "id")
		if err != nil {
			return err
		}
		web.WriteJSON(w, 200, map[string]string{"id": id})
		return nil
	})
	mux.HandleFunc("GET", "/boom", func(w http.ResponseWriter, r *http.Request) error {
		panic("secret internal state")
	})
	mux.HandleFunc("DELETE", "/things/{id}", func(w http.ResponseWriter, r *http.Request) error {
		web.NoContent(w)
		return nil
	})
	mux.HandleFunc("GET", "/files/{name...}", func(w http.ResponseWriter, r *http.Request) error {
		web.WriteJSON(w, 200, map[string]string{"name": r.PathValue("name")})
		return nil
	})
	srv := httptest.NewServer(web.Chain(mux, web.Observe(slog.New(slog.NewJSONHandler(io.Discard, nil)))))
	defer srv.Close()

	// Redirects are answered, not followed: they are what is checked.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, path string) (*http.Response, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, b := get("GET", "/nowhere"); resp.StatusCode != 404 || !strings.Contains(b, `"detail"`) {
		t.Errorf("unknown path: %d %s", resp.StatusCode, b)
	}
	if resp, b := get("POST", "/things/x"); resp.StatusCode != 405 || resp.Header.Get("Allow") != "DELETE, GET" {
		t.Errorf("wrong method: %d %s allow=%q", resp.StatusCode, b, resp.Header.Get("Allow"))
	}
	if resp, b := get("GET", "/things/not-a-uuid"); resp.StatusCode != 422 || !strings.Contains(b, `"loc":["path","id"]`) {
		t.Errorf("bad uuid: %d %s", resp.StatusCode, b)
	}
	if resp, b := get("GET", "/things/0B7E2C4A-0000-4000-8000-000000000002"); resp.StatusCode != 200 || !strings.Contains(b, "0b7e2c4a-0000-4000-8000-000000000002") {
		t.Errorf("uuid: %d %s", resp.StatusCode, b)
	}
	resp, b := get("GET", "/boom")
	if resp.StatusCode != 500 || strings.Contains(b, "secret") || strings.Contains(b, "goroutine") {
		t.Errorf("panic: %d %s", resp.StatusCode, b)
	}
	if resp.Header.Get(web.RequestIDHeader) == "" {
		t.Error("panic response lacks request id")
	}
	if resp, _ := get("DELETE", "/things/x"); resp.StatusCode != 204 {
		t.Errorf("delete: %d", resp.StatusCode)
	}
	// What ServeMux does beyond matching stays: the subtree's root
	// without its slash and an unclean path are redirected.
	if resp, _ := get("GET", "/files"); resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/files/" {
		t.Errorf("subtree root: %d location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get("GET", "/things/../files/a"); resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/files/a" {
		t.Errorf("unclean path: %d location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, b := get("GET", "/files/a/b.txt"); resp.StatusCode != 200 || !strings.Contains(b, `"a/b.txt"`) {
		t.Errorf("subtree file: %d %s", resp.StatusCode, b)
	}
	if resp, b := get("PUT", "/files/a"); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" && resp.Header.Get("Allow") != "GET" {
		t.Errorf("subtree wrong method: %d %s allow=%q", resp.StatusCode, b, resp.Header.Get("Allow"))
	}
}

func TestRequestIDKeptOrReplaced(t *testing.T) {
	h := web.Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, web.RequestID(r.Context()))
	}), web.Observe(slog.New(slog.NewJSONHandler(io.Discard, nil))))
	for in, keep := range map[string]bool{"abc-123": true, "bad id\nx": false, strings.Repeat("a", 200): false} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set(web.RequestIDHeader, in)
		h.ServeHTTP(rec, req)
		got := rec.Header().Get(web.RequestIDHeader)
		if (got == in) != keep || rec.Body.String() != got {
			t.Errorf("request id %q → %q (body %q), keep=%v", in, got, rec.Body.String(), keep)
		}
	}
}

func TestQueryInt(t *testing.T) {
	for q, want := range map[string]int{"": 20, "limit=5": 5, "limit=0": -1, "limit=101": -1, "limit=x": -1} {
		r := httptest.NewRequest("GET", "/?"+q, nil)
		n, err := web.QueryInt(r, "limit", 20, 1, 100)
		if want < 0 {
			if err == nil {
				t.Errorf("%s: want error", q)
			}
			continue
		}
		if err != nil || n != want {
			t.Errorf("%s: %d %v", q, n, err)
		}
	}
}

// ParseUUID returns a canonical id as it is and lower-cases any other
// valid one, as uuid.Parse and String would.
func TestParseUUID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"01a21f77-1817-78e3-85c4-6be45719fd6a", "01a21f77-1817-78e3-85c4-6be45719fd6a"},
		{"01A21F77-1817-78E3-85C4-6BE45719FD6A", "01a21f77-1817-78e3-85c4-6be45719fd6a"},
		{"01a21F77-1817-78e3-85C4-6be45719fd6A", "01a21f77-1817-78e3-85c4-6be45719fd6a"},
		{"00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000"},
		{"01a21f77-1817-78e3-85c4-6be45719fd6", ""},
		{"01a21f77x1817-78e3-85c4-6be45719fd6a", ""},
		{"01a21f77-1817-78e3-85c4-6be45719fd6g", ""},
		{"{1a21f77-1817-78e3-85c4-6be45719fd6a", ""},
		{"01a21f7--1817-78e3-85c4-6be45719fd6a", ""},
		{"urn:uuid:01a21f77-1817-78e3-85c4-6be4", ""},
	} {
		if web.IsUUID(c.in) != (c.want != "") {
			t.Errorf("IsUUID(%q) = %v", c.in, !(c.want != ""))
		}
		got, err := web.ParseUUID(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: accepted as %q", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

package web_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Where the writer takes no deadlines (a recorder, the Lambda proxy) the
// body is read as it is.
func TestSlowBodiesWithoutDeadlines(t *testing.T) {
	h := web.SlowBodies(web.BodyTimeouts{Idle: time.Millisecond, MinRate: 1 << 30, Grace: time.Millisecond})(
		web.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			var v map[string]any
			if err := web.DecodeJSON(r, &v, false); err != nil {
				return err
			}
			web.WriteJSON(w, 200, v)
			return nil
		}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", bytes.NewReader([]byte(`{"a":1}`))))
	if rec.Code != 200 || rec.Body.String() != `{"a":1}` {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// The cost of the deadlines on a real connection: a 16 KiB POST read
// with and without SlowBodies.
func BenchmarkSlowBodies(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 16<<10)
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(204)
	})
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"plain", read},
		{"deadlines", web.SlowBodies(web.BodyTimeouts{Idle: 30 * time.Second, MinRate: 1024, Grace: 30 * time.Second})(read)},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				resp, err := http.Post(srv.URL, "application/octet-stream", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

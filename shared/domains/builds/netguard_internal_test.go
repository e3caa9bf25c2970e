package builds

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The dialer checks what a name resolves to at connect time: "localhost"
// passes no static check here, only the dialer stands between the client and
// the loopback server.
func TestGuardedClientRefusesNonPublicAtDial(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://example.com/", http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, strings.Repeat("x", 100))
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	c := guardedHTTPClient()
	get := func(ctx context.Context, u string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	for _, ctx := range []context.Context{context.Background(), withNetPolicy(context.Background(), false)} {
		if _, err := get(ctx, url); !errors.Is(err, ErrNonPublic) {
			t.Fatalf("hosted request to localhost: %v", err)
		}
	}
	if hits != 0 {
		t.Fatal("the loopback server was reached")
	}
	local := withNetPolicy(context.Background(), true)
	if body, err := get(local, url); err != nil || len(body) != 100 {
		t.Fatalf("local policy: %q %v", body, err)
	}
	// Redirects off https are refused for hosted clones.
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://example.com/", nil)
	if err := c.CheckRedirect(req, []*http.Request{req}); !errors.Is(err, ErrNonPublic) {
		t.Fatalf("redirect to http: %v", err)
	}
	// Responses are capped.
	old := MaxDownloadBytes
	MaxDownloadBytes = 10
	defer func() { MaxDownloadBytes = old }()
	small := guardedHTTPClient()
	req, _ = http.NewRequestWithContext(local, "GET", url, nil)
	resp, err := small.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, errTooBig) {
		t.Fatalf("cap: %v", err)
	}
}

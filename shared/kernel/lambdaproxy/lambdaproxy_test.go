package lambdaproxy_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/agentplane/agentplane/shared/kernel/lambdaproxy"
)

// event loads a proxy event as API Gateway sends it to the function.
func event(t *testing.T, name string) events.APIGatewayProxyRequest {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func header(resp events.APIGatewayProxyResponse, name string) string {
	if v := resp.MultiValueHeaders[http.CanonicalHeaderKey(name)]; len(v) > 0 {
		return v[0]
	}
	return resp.Headers[name]
}

// A binary request body arrives base64-encoded and is decoded for the
// handler; a binary response body goes back base64-encoded.
func TestBinaryBodies(t *testing.T) {
	mux := http.NewServeMux()
	var gotAddr, gotName string
	mux.HandleFunc("POST /echo/{name}", func(w http.ResponseWriter, r *http.Request) {
		gotAddr, gotName = r.RemoteAddr, r.PathValue("name")
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Add("X-Echo", "one")
		w.Header().Add("X-Echo", "two")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	resp, err := lambdaproxy.Handler(mux)(context.Background(), event(t, "post-binary.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 1, 2, 3, 0xff, 0xfe, 0xfd, 0xfc, 'H', 'e', 'l', 'l', 'o'}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if !resp.IsBase64Encoded {
		t.Fatalf("binary body not base64-encoded: %q", resp.Body)
	}
	got, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("body %x (%v), want %x", got, err, want)
	}
	if v := resp.MultiValueHeaders["X-Echo"]; len(v) != 2 || v[0] != "one" || v[1] != "two" {
		t.Errorf("X-Echo %v", v)
	}
	if gotName != "blob" || gotAddr != "198.51.100.7" {
		t.Errorf("path value %q, remote address %q", gotName, gotAddr)
	}
}

func TestIncompleteResponses(t *testing.T) {
	ev := event(t, "post-binary.json")
	for _, tc := range []struct {
		name     string
		h        http.HandlerFunc
		status   int
		body     string
		jsonBody bool
	}{
		{"writes nothing", func(w http.ResponseWriter, r *http.Request) {}, 200, "", false},
		{"header only", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-A", "b") }, 200, "", false},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, 204, "", false},
		{"first status wins", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusTeapot)
		}, 202, "", false},
		{"body without status", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hi") }, 200, "hi", false},
		{"panic", func(w http.ResponseWriter, r *http.Request) { panic("boom") }, 500, `{"detail":"Internal server error"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := lambdaproxy.Handler(tc.h)(context.Background(), ev)
			if err != nil {
				t.Fatalf("error %v: API Gateway would answer 502", err)
			}
			if resp.StatusCode != tc.status || resp.Body != tc.body {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, resp.Body, tc.status, tc.body)
			}
			if tc.jsonBody && header(resp, "Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", header(resp, "Content-Type"))
			}
		})
	}
	// Without the guard the adapter fails the invocation (a 502 at API
	// Gateway): the case the guard exists for.
	if _, err := httpadapter.New(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ProxyWithContext(context.Background(), ev); err == nil {
		t.Error("the bare adapter accepted an empty response; the guard may be unnecessary now")
	}
}

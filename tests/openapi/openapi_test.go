// Package openapi_test validates the document GET /openapi.json serves
// with a real OpenAPI 3.1 validator (npm @seriousme/openapi-schema-validator,
// pinned by package-lock.json).
package openapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
)

func TestServedDocumentIsValidOpenAPI31(t *testing.T) {
	if _, err := os.Stat("node_modules/@seriousme/openapi-schema-validator"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node_modules missing: run through make test (npm ci in tests/openapi)")
		}
		t.Skip("npm ci --prefix tests/openapi first")
	}
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us", LogLevel: "error"}
	pr, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	srv := httptest.NewServer(pr.Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", "validate.mjs", path).CombinedOutput()
	if err != nil {
		t.Fatalf("validator: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))

	resp, err = http.Get(srv.URL + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "openapi.json") || strings.Contains(string(page), "https://") {
		t.Fatalf("GET /docs: %d (the page must load nothing from the internet)", resp.StatusCode)
	}
}

package catalog_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/domains/apidocs"
)

var update = flag.Bool("update", false, "rewrite shared/domains/apidocs/openapi.json")

// The served document is the one the declarations give: regenerate it
// with `go test ./shared/compose/catalog -run OpenAPI -update` (make openapi).
func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	doc, err := catalog.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc = append(doc, '\n')
	if *update {
		if err := os.WriteFile("../../domains/apidocs/openapi.json", doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(doc, apidocs.Document) {
		t.Fatal("shared/domains/apidocs/openapi.json is stale: run make openapi")
	}
}

// Every served route is in the document, with its method.
func TestOpenAPIHasEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Info    struct{ Version string }  `json:"info"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(apidocs.Document, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "0.1.0" {
		t.Errorf("openapi %q, version %q", doc.OpenAPI, doc.Info.Version)
	}
	n := 0
	for _, r := range catalog.Routes() {
		path := strings.ReplaceAll(strings.TrimSuffix(r.Path, "{$}"), "...}", "}")
		if _, ok := doc.Paths[path][strings.ToLower(r.Method)]; !ok {
			t.Errorf("%s is not in the document", r.Pattern())
		}
		n++
	}
	if n < 50 {
		t.Errorf("only %d routes", n)
	}
}

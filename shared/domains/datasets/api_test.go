package datasets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/datasets"
	"github.com/google/uuid"
)

func ids(l []map[string]any) []string {
	out := make([]string, len(l))
	for i, m := range l {
		out[i], _ = m["id"].(string)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestDatasetCRUD(t *testing.T) {
	e := newEnv(t)
	d := e.must(200, e.do(e.key, "POST", "/datasets", map[string]any{
		"name": "qa", "description": "questions", "data_type": "llm",
		"extra": map[string]any{"source": "sdk", "metadata": map[string]any{"team": "a"}},
	})).obj()
	id := d["id"].(string)
	for _, f := range []string{"id", "name", "description", "data_type", "created_at", "modified_at", "example_count",
		"session_count", "last_session_start_time", "inputs_schema_definition", "outputs_schema_definition", "metadata"} {
		if _, ok := d[f]; !ok {
			t.Errorf("dataset lacks %s: %v", f, d)
		}
	}
	if d["data_type"] != "llm" || d["example_count"] != float64(0) {
		t.Fatalf("dataset %v", d)
	}
	e.must(409, e.do(e.key, "POST", "/datasets", map[string]any{"name": "qa"}))
	other := e.dataset("chatty")
	e.must(200, e.do(e.key, "PATCH", "/datasets/"+other, map[string]any{"metadata": map[string]any{"team": "b"}}))

	// Served at / and under /api/v1, with the same data.
	got := e.must(200, e.do(e.key, "GET", "/api/v1/datasets/"+id, nil)).obj()
	if got["name"] != "qa" {
		t.Fatalf("get %v", got)
	}
	list := func(q string) []string {
		return ids(e.must(200, e.do(e.key, "GET", "/datasets?"+q, nil)).list())
	}
	if l := list(""); len(l) != 2 || l[0] != other {
		t.Fatalf("newest first: %v", l)
	}
	for q, want := range map[string][]string{
		"name=qa":                   {id},
		"name=nope":                 {},
		"name_contains=HAT":         {other},
		"data_type=llm":             {id},
		"id=" + id + "&id=" + other: {id, other},
		"metadata=" + url.QueryEscape(`{"team":"b"}`): {other},
		"limit=1&offset=1":                            {id},
	} {
		if l := list(q); !sameSet(l, want) {
			t.Errorf("%s: %v, want %v", q, l, want)
		}
	}
	// Rename frees the old name.
	e.must(409, e.do(e.key, "PATCH", "/datasets/"+other, map[string]any{"name": "qa"}))
	p := e.must(200, e.do(e.key, "PATCH", "/datasets/"+id, map[string]any{"name": "qa2", "description": "new"})).obj()
	if p["name"] != "qa2" || p["description"] != "new" {
		t.Fatalf("patch %v", p)
	}
	e.dataset("qa")
	e.must(200, e.do(e.key, "DELETE", "/datasets/"+id, nil))
	e.must(404, e.do(e.key, "GET", "/datasets/"+id, nil))
	e.must(404, e.do(e.key, "DELETE", "/datasets/"+id, nil))
	// A Viewer reads but does not write.
	e.must(200, e.do(e.viewer, "GET", "/datasets", nil))
	e.must(403, e.do(e.viewer, "POST", "/datasets", map[string]any{"name": "v"}))
}

// at is an example's modified_at: the version it was written in.
func at(m map[string]any) string { return m["modified_at"].(string) }

func TestExampleVersions(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("versions")
	// v1: one example.
	a := e.must(200, e.do(e.key, "POST", "/examples", map[string]any{
		"dataset_id": ds, "inputs": map[string]any{"q": "a"}, "outputs": map[string]any{"r": 1}, "metadata": map[string]any{"k": "x"},
	})).obj()
	v1 := at(a)
	// v2: two more in one bulk request (one version).
	bulk := e.must(200, e.do(e.key, "POST", "/examples/bulk", []map[string]any{
		{"dataset_id": ds, "inputs": map[string]any{"q": "b"}, "split": "train"},
		{"dataset_id": ds, "inputs": map[string]any{"q": "c"}, "split": []string{"test", "train"}},
	})).list()
	if len(bulk) != 2 || at(bulk[0]) != at(bulk[1]) {
		t.Fatalf("bulk: %v", bulk)
	}
	v2 := at(bulk[0])
	// v3: edit a.
	aid := a["id"].(string)
	edited := e.must(200, e.do(e.key, "PATCH", "/examples/"+aid, map[string]any{"inputs": map[string]any{"q": "a2"}})).obj()
	v3 := at(edited)
	// v4: delete b.
	bid := bulk[0]["id"].(string)
	e.must(200, e.do(e.key, "DELETE", "/examples/"+bid, nil))
	e.must(404, e.do(e.key, "GET", "/examples/"+bid, nil))

	versions := e.must(200, e.do(e.key, "GET", "/datasets/"+ds+"/versions", nil)).list()
	if len(versions) != 4 || versions[1]["as_of"] != v3 || versions[3]["as_of"] != v1 {
		t.Fatalf("versions %v (v1 %s v3 %s)", versions, v1, v3)
	}
	v4 := versions[0]["as_of"].(string)

	list := func(q string) []map[string]any {
		return e.must(200, e.do(e.key, "GET", "/examples?dataset="+ds+"&"+q, nil)).list()
	}
	inputs := func(l []map[string]any) []string {
		var out []string
		for _, m := range l {
			out = append(out, m["inputs"].(map[string]any)["q"].(string))
		}
		// Examples of one bulk request share created_at and are ordered
		// by id: compare as sets.
		sort.Strings(out)
		return out
	}
	for asOf, want := range map[string]string{
		"":                     "[a2 c]",
		"latest":               "[a2 c]",
		v1:                     "[a]",
		v2:                     "[a b c]",
		v3:                     "[a2 b c]",
		v4:                     "[a2 c]",
		"2001-01-01T00:00:00Z": "[]",
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339): "[a2 c]",
	} {
		got := inputs(list("as_of=" + url.QueryEscape(asOf)))
		if fmt.Sprint(got) != want && !(want == "[]" && got == nil) {
			t.Errorf("as_of %q: %v, want %s", asOf, got, want)
		}
	}
	// One example as of a version: the deleted one comes back, the edit
	// goes away.
	if g := e.must(200, e.do(e.key, "GET", "/examples/"+bid+"?as_of="+url.QueryEscape(v3), nil)).obj(); g["inputs"].(map[string]any)["q"] != "b" {
		t.Fatalf("b at v3: %v", g)
	}
	if g := e.must(200, e.do(e.key, "GET", "/examples/"+aid+"?as_of="+url.QueryEscape(v2), nil)).obj(); g["inputs"].(map[string]any)["q"] != "a" {
		t.Fatalf("a at v2: %v", g)
	}
	e.must(404, e.do(e.key, "GET", "/examples/"+bid+"?as_of="+url.QueryEscape(v1), nil))

	// Tags: as_of names a tag; moving a tag moves it.
	e.must(200, e.do(e.key, "PUT", "/datasets/"+ds+"/tags", map[string]any{"as_of": v2, "tag": "prod"}))
	if got := inputs(list("as_of=prod")); fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("prod: %v", got)
	}
	e.must(200, e.do(e.key, "PUT", "/datasets/"+ds+"/tags", map[string]any{"as_of": v3, "tag": "prod"}))
	if got := inputs(list("as_of=prod")); fmt.Sprint(got) != "[a2 b c]" {
		t.Fatalf("prod moved: %v", got)
	}
	vs := e.must(200, e.do(e.key, "GET", "/datasets/"+ds+"/versions", nil)).list()
	if fmt.Sprint(vs[1]["tags"]) != "[prod]" || fmt.Sprint(vs[2]["tags"]) != "[]" {
		t.Fatalf("tags: %v", vs)
	}
	if v := e.must(200, e.do(e.key, "GET", "/datasets/"+ds+"/version?tag=prod", nil)).obj(); v["as_of"] != v3 {
		t.Fatalf("version by tag %v", v)
	}
	e.must(404, e.do(e.key, "GET", "/examples?dataset="+ds+"&as_of=nope", nil))
	e.must(404, e.do(e.key, "PUT", "/datasets/"+ds+"/tags", map[string]any{"as_of": "2001-01-01T00:00:00Z", "tag": "x"}))

	// Splits: at a version, and changed as a new version.
	if s := e.must(200, e.do(e.key, "GET", "/datasets/"+ds+"/splits?as_of="+url.QueryEscape(v3), nil)); string(s.raw) != `["base","test","train"]` {
		t.Fatalf("splits at v3: %s", s.raw)
	}
	if got := inputs(list("splits=train")); fmt.Sprint(got) != "[c]" {
		t.Fatalf("train: %v", got)
	}
	if got := inputs(list("splits=train&as_of=" + url.QueryEscape(v3))); fmt.Sprint(got) != "[b c]" {
		t.Fatalf("train at v3: %v", got)
	}
	e.must(200, e.do(e.key, "PUT", "/datasets/"+ds+"/splits", map[string]any{"split_name": "train", "examples": []string{aid}}))
	if got := inputs(list("splits=train")); fmt.Sprint(got) != "[a2 c]" {
		t.Fatalf("train after add: %v", got)
	}
	e.must(200, e.do(e.key, "PUT", "/datasets/"+ds+"/splits", map[string]any{"split_name": "train", "examples": []string{aid}, "remove": true}))
	if got := inputs(list("splits=train")); fmt.Sprint(got) != "[c]" {
		t.Fatalf("train after remove: %v", got)
	}
	d := e.must(200, e.do(e.key, "GET", "/datasets/"+ds, nil)).obj()
	if d["example_count"] != float64(2) {
		t.Fatalf("example_count %v", d["example_count"])
	}

	// By id, with and without a version; limit and offset.
	if got := ids(e.must(200, e.do(e.key, "GET", "/examples?id="+bid+"&id="+aid+"&as_of="+url.QueryEscape(v2), nil)).list()); !sameSet(got, []string{aid, bid}) {
		t.Fatalf("by id at v2: %v", got)
	}
	if got := ids(e.must(200, e.do(e.key, "GET", "/examples?id="+bid, nil)).list()); len(got) != 0 {
		t.Fatalf("deleted by id: %v", got)
	}
	var paged []string
	for off := range 4 {
		paged = append(paged, inputs(list("as_of="+url.QueryEscape(v3)+"&limit=1&offset="+fmt.Sprint(off)))...)
	}
	if fmt.Sprint(paged[1:]) != "[b c]" && fmt.Sprint(paged[1:]) != "[c b]" || paged[0] != "a2" {
		t.Fatalf("pages at v3: %v", paged)
	}
	if got := inputs(list("limit=1&offset=1")); fmt.Sprint(got) != "[c]" {
		t.Fatalf("page: %v", got)
	}
	// DELETE /examples?example_ids= (the SDK's deleteExamples).
	e.must(200, e.do(e.key, "DELETE", "/examples?example_ids="+aid, nil))
	if got := inputs(list("")); fmt.Sprint(got) != "[c]" {
		t.Fatalf("after bulk delete: %v", got)
	}
}

func TestExampleFilter(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("filter")
	e.must(200, e.do(e.key, "POST", "/examples/bulk", []map[string]any{
		{"dataset_id": ds, "inputs": map[string]any{"q": "one"}, "metadata": map[string]any{"foo": "bar", "n": 1}},
		{"dataset_id": ds, "inputs": map[string]any{"q": "two"}, "metadata": map[string]any{"foo": "bar", "baz": "qux", "n": 2}},
		{"dataset_id": ds, "inputs": map[string]any{"q": "three"}, "metadata": map[string]any{"tags": []string{"x", "y"}, "n": 3}},
	}))
	count := func(filter string) int {
		r := e.must(200, e.do(e.key, "GET", "/examples?dataset="+ds+"&filter="+url.QueryEscape(filter), nil))
		return len(r.list())
	}
	for f, want := range map[string]int{
		`exists(metadata, "baz")`:                                       1,
		`exists(metadata, "bazzz")`:                                     0,
		`has("metadata", '{"foo": "bar"}')`:                             2,
		`has(metadata, '{"foo": "bar", "baz": "qux"}')`:                 1,
		`and(not(has(metadata, '{"foo": "bar"}')), exists(metadata.n))`: 1,
		`or(eq(metadata.n, 1), eq(metadata.n, 3))`:                      2,
		`gte(metadata.n, 2)`:                                            2,
		`has(metadata.tags, "y")`:                                       1,
		`in(inputs.q, ["one", "three"])`:                                2,
		`search(inputs.q, "TW")`:                                        1,
		`neq(metadata.foo, "bar")`:                                      1,
		`gt(created_at, "2000-01-01T00:00:00Z")`:                        3,
	} {
		if got := count(f); got != want {
			t.Errorf("%s: %d, want %d", f, got, want)
		}
	}
	if got := e.must(200, e.do(e.key, "GET", "/examples?dataset="+ds+"&metadata="+url.QueryEscape(`{"foo":"bar","baz":"qux"}`), nil)).list(); len(got) != 1 {
		t.Fatalf("metadata: %v", got)
	}
	r := e.must(422, e.do(e.key, "GET", "/examples?dataset="+ds+"&filter="+url.QueryEscape(`and(eq(metadata.n, 1)`), nil))
	if !strings.Contains(string(r.raw), "position 21") || !strings.Contains(string(r.raw), `"filter"`) {
		t.Fatalf("syntax error: %s", r.raw)
	}
}

func multipartBody(t *testing.T, parts map[string]string) (string, []byte) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	names := make([]string, 0, len(parts))
	for k := range parts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		fw, err := w.CreateFormFile(n, "blob")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(parts[n]))
	}
	_ = w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

func TestMultipartExamples(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("mp")
	a, b := uuid.NewString(), uuid.NewString()
	ct, body := multipartBody(t, map[string]string{
		a:              `{"created_at": "2026-01-01T00:00:00Z", "metadata": {"m": 1}, "split": "train"}`,
		a + ".inputs":  `{"q": "a"}`,
		a + ".outputs": `{"r": "A"}`,
		b:              `{}`,
		b + ".inputs":  `{"q": "b"}`,
	})
	for _, prefix := range []string{"", "/api/v1"} {
		path := "/v1/platform/datasets/" + ds + "/examples"
		if prefix != "" {
			path = "/api/v1/platform/datasets/" + ds + "/examples"
		}
		r := e.do(e.key, "POST", path, body, "Content-Type", ct)
		if prefix == "" {
			e.must(200, r)
			var res struct {
				ExampleIDs []string `json:"example_ids"`
				Count      int      `json:"count"`
			}
			_ = json.Unmarshal(r.raw, &res)
			if res.Count != 2 || !sameSet(res.ExampleIDs, []string{a, b}) {
				t.Fatalf("upload: %s", r.raw)
			}
		} else {
			e.must(409, r) // the same ids again
		}
	}
	got := e.must(200, e.do(e.key, "GET", "/examples/"+a, nil)).obj()
	if got["created_at"] != "2026-01-01T00:00:00Z" || got["outputs"].(map[string]any)["r"] != "A" ||
		fmt.Sprint(got["metadata"]) != "map[dataset_split:[train] m:1]" {
		t.Fatalf("example a: %v", got)
	}
	// PATCH: inputs replaced, metadata and split set, outputs kept.
	ct, body = multipartBody(t, map[string]string{
		a:             `{"metadata": {"m": 2}, "split": ["test"]}`,
		a + ".inputs": `{"q": "a2"}`,
	})
	e.must(200, e.do(e.key, "PATCH", "/api/v1/platform/datasets/"+ds+"/examples", body, "Content-Type", ct))
	got = e.must(200, e.do(e.key, "GET", "/examples/"+a, nil)).obj()
	if got["inputs"].(map[string]any)["q"] != "a2" || got["outputs"].(map[string]any)["r"] != "A" ||
		fmt.Sprint(got["metadata"]) != "map[dataset_split:[test] m:2]" {
		t.Fatalf("patched a: %v", got)
	}
	// An empty body, a non-multipart body, attachments, a part that is not
	// an example's, bad JSON: 422, and nothing changes.
	ct, body = multipartBody(t, map[string]string{})
	for _, c := range []struct {
		ct   string
		body []byte
	}{
		{ct, body},
		{"application/json", []byte(`{}`)},
		{"multipart/form-data; boundary=x", nil},
		{"multipart/form-data; boundary=x", []byte("--x\r\nbroken")},
	} {
		e.must(422, e.do(e.key, "POST", "/v1/platform/datasets/"+ds+"/examples", c.body, "Content-Type", c.ct))
	}
	n := uuid.NewString()
	for _, parts := range []map[string]string{
		{n: `{}`, n + ".attachment.img": "bytes"},
		{"not-an-id": `{}`},
		{n: `{}`, n + ".inputs": `{bad`},
		{n: `{"nope": 1}`},
		{n: `{}`, n + ".weird": `{}`},
	} {
		ct, body := multipartBody(t, parts)
		e.must(422, e.do(e.key, "POST", "/v1/platform/datasets/"+ds+"/examples", body, "Content-Type", ct))
	}
	// Updating an example that is not in the dataset is a 404.
	ct, body = multipartBody(t, map[string]string{n: `{}`, n + ".inputs": `{"q": 1}`})
	e.must(404, e.do(e.key, "PATCH", "/v1/platform/datasets/"+ds+"/examples", body, "Content-Type", ct))
	if d := e.must(200, e.do(e.key, "GET", "/datasets/"+ds, nil)).obj(); d["example_count"] != float64(2) {
		t.Fatalf("count %v", d["example_count"])
	}
}

func TestIsolation(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("mine")
	ex := e.must(200, e.do(e.key, "POST", "/examples", map[string]any{"dataset_id": ds, "inputs": map[string]any{}})).obj()["id"].(string)
	// The org admin reaches it with X-Tenant-Id; without it, the key
	// reaches two workspaces and must choose.
	e.must(200, e.do(e.admin, "GET", "/datasets/"+ds, nil, "X-Tenant-Id", e.ws))
	e.must(400, e.do(e.admin, "GET", "/datasets/"+ds, nil))
	for _, c := range []struct{ key, tenant string }{{e.key2, ""}, {e.admin, e.ws2}, {e.other, ""}} {
		h := []string{}
		if c.tenant != "" {
			h = []string{"X-Tenant-Id", c.tenant}
		}
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/datasets/" + ds, nil},
			{"PATCH", "/datasets/" + ds, map[string]any{"name": "x"}},
			{"DELETE", "/datasets/" + ds, nil},
			{"GET", "/datasets/" + ds + "/versions", nil},
			{"GET", "/datasets/" + ds + "/splits", nil},
			{"PUT", "/datasets/" + ds + "/splits", map[string]any{"split_name": "s", "examples": []string{ex}}},
			{"PUT", "/datasets/" + ds + "/tags", map[string]any{"as_of": "2026-01-01T00:00:00Z", "tag": "t"}},
			{"GET", "/examples?dataset=" + ds, nil},
			{"GET", "/examples/" + ex, nil},
			{"PATCH", "/examples/" + ex, map[string]any{"inputs": map[string]any{}}},
			{"DELETE", "/examples/" + ex, nil},
			{"DELETE", "/examples?example_ids=" + ex, nil},
			{"POST", "/examples", map[string]any{"dataset_id": ds, "inputs": map[string]any{}}},
		} {
			e.must(404, e.do(c.key, r.method, r.path, r.body, h...))
		}
		if l := e.must(200, e.do(c.key, "GET", "/datasets", nil, h...)).list(); len(l) != 0 {
			t.Fatalf("listed another workspace's datasets: %v", l)
		}
		if l := e.must(200, e.do(c.key, "GET", "/examples?id="+ex, nil, h...)).list(); len(l) != 0 {
			t.Fatalf("listed another workspace's examples: %v", l)
		}
	}
	e.must(401, e.do("nope", "GET", "/datasets", nil))
}

func TestBadInputNeverFails(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("bad")
	ex := e.must(200, e.do(e.key, "POST", "/examples", map[string]any{"dataset_id": ds, "inputs": map[string]any{}})).obj()["id"].(string)
	bodies := []any{nil, "", "{", "[]", "null", `{"x":1}`, `{"name": 5}`, `{"inputs": "s"}`, `[{"dataset_id": 1}]`,
		map[string]any{"dataset_id": ds, "inputs": []int{1}}, map[string]any{"dataset_id": ds, "split": 3},
		map[string]any{"as_of": "x", "tag": "t"}, map[string]any{"split_name": "", "examples": []string{"x"}},
		map[string]any{"name": strings.Repeat("n", 2000)}, map[string]any{"dataset_id": ds, "inputs": map[string]any{"big": strings.Repeat("x", 200_000)}}}
	paths := []struct{ method, path string }{
		{"GET", "/datasets?limit=0"}, {"GET", "/datasets?limit=x"}, {"GET", "/datasets?id=nope"}, {"GET", "/datasets?metadata=[1]"},
		{"GET", "/datasets?data_type=img"}, {"GET", "/datasets?offset=-1"},
		{"POST", "/datasets"}, {"GET", "/datasets/nope"}, {"PATCH", "/datasets/" + ds}, {"DELETE", "/datasets/nope"},
		{"GET", "/datasets/" + ds + "/versions?limit=1000"}, {"GET", "/datasets/" + ds + "/version"},
		{"GET", "/datasets/" + ds + "/version?as_of=x&tag=y"}, {"PUT", "/datasets/" + ds + "/tags"},
		{"GET", "/datasets/" + ds + "/splits?as_of=" + strings.Repeat("a", 300)}, {"PUT", "/datasets/" + ds + "/splits"},
		{"GET", "/examples"}, {"GET", "/examples?dataset=x"}, {"GET", "/examples?dataset=" + ds + "&filter=eq("},
		{"GET", "/examples?dataset=" + ds + "&filter=" + url.QueryEscape(strings.Repeat("not(", 100))},
		{"GET", "/examples?dataset=" + ds + "&metadata=x"}, {"GET", "/examples?dataset=" + ds + "&inline_s3_urls=maybe"},
		{"GET", "/examples?dataset=" + ds + "&as_of=tag-that-is-not"}, {"POST", "/examples"}, {"POST", "/examples/bulk"},
		{"GET", "/examples/nope"}, {"PATCH", "/examples/" + ex}, {"PATCH", "/examples/nope"}, {"DELETE", "/examples/nope"},
		{"DELETE", "/examples"}, {"DELETE", "/examples?example_ids=x"},
		{"POST", "/v1/platform/datasets/" + ds + "/examples"}, {"PATCH", "/v1/platform/datasets/nope/examples"},
	}
	for _, p := range paths {
		for _, b := range bodies {
			r := e.do(e.key, p.method, p.path, b)
			if r.code < 400 || r.code >= 500 {
				// Some bodies are valid for some routes; those may succeed.
				if r.code >= 500 {
					t.Errorf("%s %s %v: %d %s", p.method, p.path, b, r.code, r.raw)
				}
				continue
			}
			if _, ok := r.obj()["detail"]; !ok {
				t.Errorf("%s %s: no detail in %s", p.method, p.path, r.raw)
			}
		}
	}
}

func TestExperimentCounters(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("exp")
	ctx := context.Background()
	send := func(project string, start string, deleted bool) {
		t.Helper()
		ev := map[string]any{"workspace_id": e.ws, "project_id": project, "reference_dataset_id": ds, "deleted": deleted}
		if start != "" {
			ev["start_time"] = start
		}
		raw, _ := json.Marshal(ev)
		if err := e.svc.HandleExperiment(ctx, raw); err != nil {
			t.Fatal(err)
		}
	}
	check := func(count float64, last any) {
		t.Helper()
		d := e.must(200, e.do(e.key, "GET", "/datasets/"+ds, nil)).obj()
		if d["session_count"] != count || d["last_session_start_time"] != last {
			t.Fatalf("session_count %v last %v, want %v %v", d["session_count"], d["last_session_start_time"], count, last)
		}
	}
	p1, p2 := uuid.NewString(), uuid.NewString()
	send(p1, "2026-01-01T00:00:00Z", false)
	send(p1, "2026-01-01T00:00:00Z", false) // redelivered
	check(1, "2026-01-01T00:00:00Z")
	send(p2, "2026-02-01T00:00:00Z", false)
	send(p2, "2026-02-01T00:00:00Z", false)
	check(2, "2026-02-01T00:00:00Z")
	send(p2, "", true)
	send(p2, "", true)
	send(p2, "2026-02-01T00:00:00Z", false) // a late redelivery of the creation
	check(1, "2026-01-01T00:00:00Z")
	send(p1, "", true)
	check(0, nil)
	// Another workspace's event, a missing dataset, a malformed payload: no
	// effect, no error (they would never succeed on redelivery).
	for _, raw := range []string{`{`, `{"workspace_id":"` + e.ws2 + `","project_id":"p","reference_dataset_id":"` + ds + `"}`,
		`{"workspace_id":"` + e.ws + `","project_id":"p","reference_dataset_id":"` + uuid.NewString() + `"}`} {
		if err := e.svc.HandleExperiment(ctx, json.RawMessage(raw)); err != nil {
			t.Fatal(err)
		}
	}
	check(0, nil)
	if datasets.TopicExperiment != "tracing.experiment" {
		t.Fatal(datasets.TopicExperiment)
	}
}

func TestConcurrentWritesLoseNothing(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("race")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.must(200, e.do(e.key, "POST", "/examples", map[string]any{"dataset_id": ds, "inputs": map[string]any{"i": i}}))
		}()
	}
	wg.Wait()
	d := e.must(200, e.do(e.key, "GET", "/datasets/"+ds, nil)).obj()
	vs := e.must(200, e.do(e.key, "GET", "/datasets/"+ds+"/versions", nil)).list()
	if d["example_count"] != float64(8) || len(vs) != 8 {
		t.Fatalf("count %v, %d versions", d["example_count"], len(vs))
	}
	// Each version holds one more example than the one before.
	for i, v := range vs {
		got := e.must(200, e.do(e.key, "GET", "/examples?dataset="+ds+"&as_of="+url.QueryEscape(v["as_of"].(string)), nil)).list()
		if len(got) != 8-i {
			t.Fatalf("version %d has %d examples", i, len(got))
		}
	}
}

func TestSweepPurgesDeletedDatasets(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("gone")
	ex := e.must(200, e.do(e.key, "POST", "/examples", map[string]any{"dataset_id": ds, "inputs": map[string]any{"v": 1}})).obj()["id"].(string)
	for i := range 5 {
		e.must(200, e.do(e.key, "PATCH", "/examples/"+ex, map[string]any{"inputs": map[string]any{"v": i}}))
	}
	e.must(200, e.do(e.key, "DELETE", "/datasets/"+ds, nil))
	e.must(404, e.do(e.key, "GET", "/examples/"+ex, nil))
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, pk := range []string{"dsrev#" + ds, "dsopen#" + ds, "dsver#" + ds, "ex#" + ex, "dsgc"} {
		pg, err := e.st.Query(ctx, storeQuery(pk))
		if err != nil || len(pg.Items) != 0 {
			t.Fatalf("%s still holds %d items (%v)", pk, len(pg.Items), err)
		}
	}
}

// A bulk request too large for one store transaction (by operations or
// bytes) commits consecutive versions and loses nothing.
func TestLargeBulkSpansVersions(t *testing.T) {
	e := newEnv(t)
	ds := e.dataset("large")
	var body []map[string]any
	for i := range 40 {
		body = append(body, map[string]any{"dataset_id": ds, "inputs": map[string]any{"i": i, "pad": strings.Repeat("x", 90_000)}})
	}
	got := e.must(200, e.do(e.key, "POST", "/examples/bulk", body)).list()
	vs := e.must(200, e.do(e.key, "GET", "/datasets/"+ds+"/versions", nil)).list()
	if len(got) != 40 || len(vs) < 2 {
		t.Fatalf("%d examples in %d versions", len(got), len(vs))
	}
	if d := e.must(200, e.do(e.key, "GET", "/datasets/"+ds, nil)).obj(); d["example_count"] != float64(40) {
		t.Fatalf("count %v", d["example_count"])
	}
	if l := e.must(200, e.do(e.key, "GET", "/examples?dataset="+ds, nil)).list(); len(l) != 40 {
		t.Fatalf("listed %d", len(l))
	}
}

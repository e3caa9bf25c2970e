package charpages_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/domains/toolserver/charpages"
)

func TestPreviewMarksRemovedCharacters(t *testing.T) {
	in := map[string]any{
		"short":                  "abc",
		"long":                   strings.Repeat("é", 200), // characters, not bytes
		"list":                   []any{strings.Repeat("x", 151), json.Number("12345678901234567890"), true, nil},
		strings.Repeat("k", 300): "keys are never cut",
	}
	out := charpages.Preview(in, 150).(map[string]any)
	if out["short"] != "abc" || out[strings.Repeat("k", 300)] != "keys are never cut" {
		t.Fatalf("untouched values changed: %v", out)
	}
	if want := strings.Repeat("é", 150) + "… (+50 chars)"; out["long"] != want {
		t.Fatalf("long: %q", out["long"])
	}
	l := out["list"].([]any)
	if l[0] != strings.Repeat("x", 150)+"… (+1 chars)" || l[1] != json.Number("12345678901234567890") || l[2] != true || l[3] != nil {
		t.Fatalf("list: %v", l)
	}
	// The input is not modified.
	if utf8.RuneCountInString(in["long"].(string)) != 200 || len(in["list"].([]any)[0].(string)) != 151 {
		t.Fatal("Preview modified its input")
	}
	if got := charpages.Preview("abcdef", 0); got != "abcdef" {
		t.Fatalf("preview 0: %v", got)
	}
}

func msgs(n, size int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"i": json.Number(fmt.Sprint(i)), "role": "user", "content": strings.Repeat("w", size)}
	}
	return out
}

func pageSize(items []json.RawMessage) int {
	b, _ := json.Marshal(items)
	return utf8.RuneCount(b)
}

func TestPaginateDefaults(t *testing.T) {
	items := msgs(1000, 400) // ~ 430 KB of history
	p, err := charpages.Paginate(items, 1, charpages.DefaultMaxChars, charpages.DefaultPreviewChars)
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalPages < 2 || p.MaxChars != 25000 || p.PreviewChars != 150 || p.Truncated {
		t.Fatalf("page: total %d max %d preview %d truncated %v", p.TotalPages, p.MaxChars, p.PreviewChars, p.Truncated)
	}
	if s := pageSize(p.Items); s > 25000 {
		t.Fatalf("page of %d characters", s)
	}
	var m map[string]any
	if err := json.Unmarshal(p.Items[0], &m); err != nil {
		t.Fatal(err)
	}
	if m["content"] != strings.Repeat("w", 150)+"… (+250 chars)" {
		t.Fatalf("preview not applied: %v", m["content"])
	}
	// The cap.
	p, _ = charpages.Paginate(items, 1, 1_000_000, 0)
	if p.MaxChars != 30000 || pageSize(p.Items) > 30000 {
		t.Fatalf("cap: %d %d", p.MaxChars, pageSize(p.Items))
	}
	// Out of range pages: no items, the total, no error.
	for _, n := range []int{0, -1, p.TotalPages + 1} {
		q, err := charpages.Paginate(items, n, 1_000_000, 0)
		if err != nil || len(q.Items) != 0 || q.Items == nil || q.TotalPages != p.TotalPages || q.PageNumber != n {
			t.Fatalf("page %d: %+v %v", n, q, err)
		}
	}
	// No items: zero pages.
	q, _ := charpages.Paginate(nil, 1, 100, 10)
	if q.TotalPages != 0 || len(q.Items) != 0 {
		t.Fatalf("empty: %+v", q)
	}
}

// An item bigger than the budget sits alone and is cut to fit; one whose
// structure alone exceeds the budget is still returned, cut at zero.
func TestOversizedItems(t *testing.T) {
	items := []any{
		map[string]any{"i": json.Number("0"), "content": "small"},
		map[string]any{"i": json.Number("1"), "content": strings.Repeat("<big>", 2000), "other": strings.Repeat("ü", 3000)},
		map[string]any{"i": json.Number("2"), "content": "small"},
	}
	p, err := charpages.Paginate(items, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalPages != 3 || len(p.Items) != 1 || !p.Truncated {
		t.Fatalf("page 2: total %d items %d truncated %v", p.TotalPages, len(p.Items), p.Truncated)
	}
	if s := pageSize(p.Items); s > 1000 || s < 900 {
		t.Fatalf("cut page of %d characters; want close to 1000", s)
	}
	var m map[string]any
	_ = json.Unmarshal(p.Items[0], &m)
	for _, k := range []string{"content", "other"} {
		if !strings.Contains(m[k].(string), " chars)") {
			t.Fatalf("%s not marked: %v", k, m[k])
		}
	}
	tiny, _ := charpages.Paginate(items, 2, 5, 0)
	if len(tiny.Items) != 1 || !tiny.Truncated || !bytes.Contains(tiny.Items[0], []byte(`"i":1`)) {
		t.Fatalf("tiny budget: %s", tiny.Items)
	}
}

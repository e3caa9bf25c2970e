package charpages_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/toolserver/charpages"
)

// fuzzItems builds the items of a fuzz input: the elements of data when it
// is a JSON array, else the pieces of data split at zero bytes (strings),
// each wrapped as {"i": index, "v": element} so pages can be checked for
// every item exactly once, in order.
func fuzzItems(data []byte) []any {
	var elems []any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&elems); err != nil || d.More() {
		elems = nil
		for _, part := range bytes.Split(data, []byte{0}) {
			elems = append(elems, string(part))
		}
	}
	// Every page request repaginates the whole result, so checking all
	// pages is quadratic: keep the item count small.
	if len(elems) > 200 {
		elems = elems[:200]
	}
	items := make([]any, len(elems))
	for i, e := range elems {
		items[i] = map[string]any{"i": json.Number(fmt.Sprint(i)), "v": e}
	}
	return items
}

// The properties: every page of a result reports the same total; the
// pages, concatenated, hold every item once and in order; a page of several
// items fits the budget; only a single item is ever cut past its preview;
// the same request gives the same bytes; pages outside the range are empty.
func FuzzPaginate(f *testing.F) {
	f.Add([]byte(`[{"role":"user","content":"hello"},{"role":"assistant","content":"hi there"}]`), 40, 3)
	f.Add([]byte("first\x00second message that is long\x00\x00<&>\u2028é😀"), 25000, 150)
	f.Add([]byte(`["`+string(bytes.Repeat([]byte("x"), 5000))+`", 1, 2.5e10, null, true, {"a":[["deep"]]}]`), 1000, 0)
	f.Add([]byte(`[]`), 100, 10)
	f.Add([]byte(`[{"k":"v"}]`), 0, 0)
	f.Add([]byte(`[1,2,3,4,5,6,7,8,9,10,11,12]`), 30, -5)
	f.Fuzz(func(t *testing.T, data []byte, maxChars, preview int) {
		maxChars = maxChars%40000 - 100 // small and negative budgets too
		preview = preview % 400
		items := fuzzItems(data)
		for _, it := range items {
			std, err1 := json.Marshal(charpages.Preview(it, preview))
			ours, err2 := charpages.Encode(charpages.Preview(it, preview))
			if err1 != nil || err2 != nil || !bytes.Equal(std, ours) {
				t.Fatalf("Encode differs from encoding/json:\n%s\n%s (%v %v)", std, ours, err1, err2)
			}
		}
		first, err := charpages.Paginate(items, 1, maxChars, preview)
		if err != nil {
			t.Fatal(err)
		}
		total := first.TotalPages
		if (total == 0) != (len(items) == 0) || total > len(items) {
			t.Fatalf("%d items in %d pages", len(items), total)
		}
		budget := min(maxChars, charpages.MaxChars)
		next := 0
		for n := 1; n <= total; n++ {
			p, err := charpages.Paginate(items, n, maxChars, preview)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := charpages.Paginate(items, n, maxChars, preview)
			if !equalPages(p, again) {
				t.Fatalf("page %d differs between two identical requests", n)
			}
			if p.TotalPages != total || p.PageNumber != n || p.MaxChars != budget || p.PreviewChars != preview {
				t.Fatalf("page %d envelope: %+v", n, p)
			}
			if len(p.Items) == 0 {
				t.Fatalf("page %d of %d is empty", n, total)
			}
			if p.Truncated && len(p.Items) != 1 {
				t.Fatalf("page %d: %d items cut", n, len(p.Items))
			}
			if !p.Truncated && len(p.Items) > 1 && pageSize(p.Items) > budget {
				t.Fatalf("page %d: %d items in %d characters, budget %d", n, len(p.Items), pageSize(p.Items), budget)
			}
			for _, raw := range p.Items {
				var m struct {
					I json.Number `json:"i"`
				}
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatalf("page %d item %s: %v", n, raw, err)
				}
				if m.I.String() != fmt.Sprint(next) {
					t.Fatalf("page %d: item %s where %d was due", n, m.I, next)
				}
				next++
			}
		}
		if next != len(items) {
			t.Fatalf("pages hold %d of %d items", next, len(items))
		}
		for _, n := range []int{0, total + 1} {
			p, _ := charpages.Paginate(items, n, maxChars, preview)
			if len(p.Items) != 0 || p.TotalPages != total {
				t.Fatalf("page %d outside 1..%d: %+v", n, total, p)
			}
		}
	})
}

func equalPages(a, b charpages.Page) bool {
	if a.PageNumber != b.PageNumber || a.TotalPages != b.TotalPages || a.Truncated != b.Truncated || len(a.Items) != len(b.Items) {
		return false
	}
	for i := range a.Items {
		if !bytes.Equal(a.Items[i], b.Items[i]) {
			return false
		}
	}
	return true
}

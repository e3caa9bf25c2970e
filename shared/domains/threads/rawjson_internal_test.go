package threads

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// rawRejects never rejects a thread the general match keeps, and does
// reject the plain mismatches a walk meets.
func TestRawRejectsAgreesWithTheGeneralMatch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	values := []any{"a", "b", "", "user-7", "<&>", "é", "\"q\"", "1", true, false, nil, 1, 1.5, json.Number("1.0"),
		map[string]any{"x": "a"}, []any{"a"}}
	keys := []string{"owner", "graph_id", "o", "Owner", "<k>", "é"}
	rejected := 0
	for i := 0; i < 20000; i++ {
		md := map[string]any{}
		for _, k := range keys {
			if rnd.IntN(2) == 0 {
				md[k] = values[rnd.IntN(len(values))]
			}
		}
		th := &threadRecord{ID: "t", Deployment: "d", Metadata: md, Status: StatusIdle, CreatedAt: time.Now(),
			Values: map[string]any{"messages": []any{map[string]any{"content": "x}\"{"}}}, Lineage: []segment{{Chain: "c"}}}
		data, err := json.Marshal(th)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := decodeThread(data)
		if err != nil {
			t.Fatal(err)
		}
		filter := map[string]any{}
		for n := 1 + rnd.IntN(2); n > 0; n-- {
			filter[keys[rnd.IntN(len(keys))]] = values[rnd.IntN(len(values))]
		}
		keep := containsAll(stored.Metadata, filter)
		if rawRejects(data, filter) {
			rejected++
			if keep {
				t.Fatalf("rejected a match: metadata %s, filter %v", data, filter)
			}
		}
	}
	if rejected < 5000 {
		t.Fatalf("only %d of 20000 rows rejected on their bytes", rejected)
	}
}

func FuzzRawRejects(f *testing.F) {
	f.Add([]byte(`{"id":"t","metadata":{"owner":"user-7","n":1}}`), "owner", "user-7")
	f.Add([]byte(`{"metadata":{}}`), "owner", "x")
	f.Add([]byte(`{"metadata":{"a":"\"}"}}`), "a", "\"}")
	f.Fuzz(func(t *testing.T, data []byte, k, v string) {
		var rec struct {
			Metadata map[string]any `json:"metadata"`
		}
		if decodeJSON(data, &rec) != nil {
			_ = rawRejects(data, map[string]any{k: v}) // must not panic
			return
		}
		canon, _ := json.Marshal(rec.Metadata)
		data = []byte(fmt.Sprintf(`{"metadata":%s}`, canon))
		if rawRejects(data, map[string]any{k: v}) && containsAll(rec.Metadata, map[string]any{k: v}) {
			t.Fatalf("rejected a match: %s %q=%q", data, k, v)
		}
	})
}

package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// The sort keys of the range tests, in byte order.
var rangeSKs = []string{"A", "a", "ab", "ab\x00", "abc", "b", "b\x00", "b\x01", "ba", "c", "é"}

type rangeCase struct {
	c    store.SKCond
	want []string // ascending
}

func rangeCases() []rangeCase {
	all := rangeSKs
	return []rangeCase{
		{store.SKCond{}, all},
		{store.SKCond{Op: store.SKEqual, A: "ab"}, []string{"ab"}},
		{store.SKCond{Op: store.SKEqual, A: "zz"}, nil},
		{store.SKCond{Op: store.SKBeginsWith, A: "ab"}, []string{"ab", "ab\x00", "abc"}},
		{store.SKCond{Op: store.SKBeginsWith, A: "b"}, []string{"b", "b\x00", "b\x01", "ba"}},
		{store.SKCond{Op: store.SKBeginsWith, A: "é"}, []string{"é"}},
		{store.SKCond{Op: store.SKBeginsWith, A: ""}, all},
		{store.SKCond{Op: store.SKBetween, A: "ab", B: "b"}, []string{"ab", "ab\x00", "abc", "b"}},
		{store.SKCond{Op: store.SKBetween, A: "aa", B: "b\x00"}, []string{"ab", "ab\x00", "abc", "b", "b\x00"}},
		{store.SKCond{Op: store.SKBetween, A: "c", B: "c"}, []string{"c"}},
		{store.SKCond{Op: store.SKBetween, A: "c", B: "a"}, nil}, // inverted: empty
		{store.SKCond{Op: store.SKLess, A: "b"}, []string{"A", "a", "ab", "ab\x00", "abc"}},
		{store.SKCond{Op: store.SKLess, A: "A"}, nil},
		{store.SKCond{Op: store.SKLess, A: ""}, nil},
		{store.SKCond{Op: store.SKLessEq, A: "b"}, []string{"A", "a", "ab", "ab\x00", "abc", "b"}},
		{store.SKCond{Op: store.SKLessEq, A: "ab\x00"}, []string{"A", "a", "ab", "ab\x00"}},
		{store.SKCond{Op: store.SKGreater, A: "b"}, []string{"b\x00", "b\x01", "ba", "c", "é"}},
		{store.SKCond{Op: store.SKGreater, A: ""}, all},
		{store.SKCond{Op: store.SKGreater, A: "é"}, nil},
		{store.SKCond{Op: store.SKGreaterEq, A: "b"}, []string{"b", "b\x00", "b\x01", "ba", "c", "é"}},
		{store.SKCond{Op: store.SKGreaterEq, A: "bb"}, []string{"c", "é"}},
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func checkRanges(t *testing.T, s store.Store, index, pk string, skOf func(string) string) {
	t.Helper()
	for _, rc := range rangeCases() {
		c := rc.c
		if c.Op != store.SKAny {
			c.A = skOf(c.A)
		}
		if c.Op == store.SKBetween {
			c.B = skOf(c.B)
		}
		for _, desc := range []bool{false, true} {
			want := rc.want
			if desc {
				want = reversed(want)
			}
			for _, limit := range []int{0, 1, 3} {
				q := store.Query{Index: index, PK: pk, SK: c, Desc: desc, Limit: limit}
				got := queryAll(t, s, q)
				if strings.Join(want, ",") != sks(got) {
					t.Errorf("%s %+v desc=%v limit=%d:\n got %q\nwant %q", index, c, desc, limit, sks(got), strings.Join(want, ","))
				}
				for _, it := range got {
					if it.PK != "r" || string(it.Data) != "d"+it.SK {
						t.Fatalf("query returned a wrong item %s", show(it))
					}
				}
			}
		}
	}
}

// Every sort-key operator, both orders, on the base table; partitions
// whose keys share a prefix stay apart.
func testQueryRanges(t *testing.T, s store.Store) {
	for _, sk := range rangeSKs {
		put(t, s, item("r", sk, "d"+sk), store.Condition{})
	}
	for _, other := range []store.Key{key("rr", "a"), key("r\x00", "a"), key("R", "a"), key("r ", "b")} {
		put(t, s, store.Item{Key: other, Data: []byte("other")}, store.Condition{})
	}
	checkRanges(t, s, "", "r", func(sk string) string { return sk })
	if p, err := s.Query(ctx, store.Query{PK: "nothing-here"}); err != nil || len(p.Items) != 0 || p.Next != "" {
		t.Fatalf("empty partition: %v %+v", err, p)
	}
}

// The same on a secondary index, plus sparse indexes and index keys shared
// by several items.
func testQueryIndexes(t *testing.T, s store.Store) {
	for _, sk := range rangeSKs {
		it := item("r", sk, "d"+sk)
		it.Indexes = map[string]store.IndexKey{"gsi2": {PK: "ix", SK: "k#" + sk}}
		if sk < "b" {
			it.Indexes["gsi5"] = store.IndexKey{PK: "sparse", SK: sk}
		}
		put(t, s, it, store.Condition{})
	}
	// Another index partition that shares a prefix.
	put(t, s, store.Item{Key: key("other", "x"), Data: []byte("other"), Indexes: map[string]store.IndexKey{"gsi2": {PK: "ixx", SK: "k#a"}}}, store.Condition{})
	checkRanges(t, s, "gsi2", "ix", func(sk string) string { return "k#" + sk })

	if got := sks(queryAll(t, s, store.Query{Index: "gsi5", PK: "sparse"})); got != "A,a,ab,ab\x00,abc" {
		t.Fatalf("sparse index: %q", got)
	}
	for _, name := range store.IndexNames {
		if name == "gsi2" {
			continue
		}
		if got := queryAll(t, s, store.Query{Index: name, PK: "ix"}); len(got) != 0 {
			t.Fatalf("%s holds entries of gsi2: %q", name, sks(got))
		}
	}
	if got := queryAll(t, s, store.Query{PK: "ix"}); len(got) != 0 {
		t.Fatalf("the base table holds index keys: %q", sks(got))
	}

	// Several items under one index key: all are returned, each once.
	for i := 0; i < 5; i++ {
		put(t, s, store.Item{Key: key(fmt.Sprintf("dup%d", i), "x"), Indexes: map[string]store.IndexKey{"gsi3": {PK: "same", SK: "same"}}}, store.Condition{})
	}
	got := queryAll(t, s, store.Query{Index: "gsi3", PK: "same", Limit: 2})
	pks := map[string]bool{}
	for _, it := range got {
		pks[it.PK] = true
	}
	if len(got) != 5 || len(pks) != 5 {
		t.Fatalf("shared index key: %d items, %d distinct", len(got), len(pks))
	}

	// Deleting an item removes its index entries.
	if err := s.Delete(ctx, key("r", "a"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if got := sks(queryAll(t, s, store.Query{Index: "gsi5", PK: "sparse"})); got != "A,ab,ab\x00,abc" {
		t.Fatalf("deleted item still indexed: %q", got)
	}
}

// Limit and cursor: pages never exceed the limit, and following Next visits
// every item once, in order. Limit 0 means pages of 100.
func testPaging(t *testing.T, s store.Store) {
	const n = 150
	var want []string
	for i := 0; i < n; i++ {
		sk := fmt.Sprintf("%03d", i)
		want = append(want, sk)
		it := item("pg", sk, "")
		it.Indexes = map[string]store.IndexKey{"gsi1": {PK: "pg-ix", SK: fmt.Sprintf("%03d", n-i)}}
		put(t, s, it, store.Condition{})
	}
	p, err := s.Query(ctx, store.Query{PK: "pg"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 100 || p.Next == "" {
		t.Fatalf("limit 0: a page of %d items, next %q; want 100 and a cursor", len(p.Items), p.Next)
	}
	p2, err := s.Query(ctx, store.Query{PK: "pg", Cursor: p.Next})
	if err != nil {
		t.Fatal(err)
	}
	if sks(append(p.Items, p2.Items...)) != strings.Join(want, ",") || p2.Next != "" {
		t.Fatalf("limit 0, second page: %d items, next %q", len(p2.Items), p2.Next)
	}

	for _, limit := range []int{1, 7, 50, 149, 150, 151, 1000} {
		for _, desc := range []bool{false, true} {
			w := want
			if desc {
				w = reversed(want)
			}
			if got := sks(queryAll(t, s, store.Query{PK: "pg", Limit: limit, Desc: desc})); got != strings.Join(w, ",") {
				t.Fatalf("limit %d desc=%v: %q", limit, desc, got)
			}
			// On the index the order is reversed (index sk = n-i).
			if got := sks(queryAll(t, s, store.Query{Index: "gsi1", PK: "pg-ix", Limit: limit, Desc: !desc})); got != strings.Join(w, ",") {
				t.Fatalf("index limit %d desc=%v: %q", limit, desc, got)
			}
		}
	}
	// A range with a cursor.
	got := queryAll(t, s, store.Query{PK: "pg", SK: store.SKCond{Op: store.SKBetween, A: "010", B: "029"}, Limit: 6, Desc: true})
	if sks(got) != strings.Join(reversed(want[10:30]), ",") {
		t.Fatalf("range with cursor: %q", sks(got))
	}
}

// A cursor resumes strictly after the last returned item, even when that
// item is deleted in between, on the base table and on an index.
func testCursorAfterDeletedItem(t *testing.T, s store.Store) {
	for i := 0; i < 10; i++ {
		sk := fmt.Sprintf("%03d", i)
		put(t, s, store.Item{Key: key("pg", sk), Indexes: map[string]store.IndexKey{"gsi3": {PK: "pg-ix", SK: sk}}}, store.Condition{})
	}
	p, err := s.Query(ctx, store.Query{PK: "pg", Limit: 3})
	if err != nil || sks(p.Items) != "000,001,002" {
		t.Fatalf("first page: %v %q", err, sks(p.Items))
	}
	if err := s.Delete(ctx, key("pg", "002"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key("pg", "003"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	p, err = s.Query(ctx, store.Query{PK: "pg", Limit: 3, Cursor: p.Next})
	if err != nil || sks(p.Items) != "004,005,006" {
		t.Fatalf("after deleting the cursor's item: %v %q", err, sks(p.Items))
	}

	p, err = s.Query(ctx, store.Query{Index: "gsi3", PK: "pg-ix", Limit: 2, Desc: true})
	if err != nil || sks(p.Items) != "009,008" {
		t.Fatalf("index, first page: %v %q", err, sks(p.Items))
	}
	if _, err := s.Update(ctx, store.Update{Key: key("pg", "008"), SetIndexes: map[string]store.IndexKey{"gsi3": {PK: "elsewhere", SK: "x"}}}); err != nil {
		t.Fatal(err)
	}
	rest := queryAll(t, s, store.Query{Index: "gsi3", PK: "pg-ix", Limit: 2, Desc: true, Cursor: p.Next})
	if sks(rest) != "007,006,005,004,001,000" {
		t.Fatalf("index, after moving the cursor's item: %q", sks(rest))
	}
}

package boltstore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []record{
		{V: 1},
		{V: 7, E: 1234567890123, D: []byte("data\x00\xff"), N: map[string]int64{"a": -5, "": 1 << 62}, I: map[string][2]string{"gsi1": {"p\x00", "s"}, "gsi5": {"x", "y"}}},
	} {
		got, err := decodeRecord(encodeRecord(r))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, r)
		}
		checkReadItem(t, encodeRecord(r), r, nil)
	}
}

// Records written as JSON by the first version still read.
func TestRecordReadsJSON(t *testing.T) {
	r := record{V: 3, E: 9, D: []byte("d"), N: map[string]int64{"n": 2}, I: map[string][2]string{"gsi2": {"a", "b"}}}
	b, _ := json.Marshal(r)
	got, err := decodeRecord(b)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("%v %+v", err, got)
	}
}

// No stored bytes make the decoder panic or allocate without bound.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(record{V: 2, D: []byte("x"), N: map[string]int64{"n": 1}, I: map[string][2]string{"gsi1": {"a", "b"}}}))
	f.Add([]byte{formatBinary, 2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		checkReadItem(t, b, r, err)
		if err == nil && len(b) > 0 && b[0] == formatBinary {
			if again, err := decodeRecord(encodeRecord(r)); err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("re-encoding a decoded record: %v", err)
			}
		}
	})
}

// checkReadItem: the read path's decoder (readItem) gives what decoding
// the record and converting it gives, live or expired, and fails where
// decodeRecord fails.
func checkReadItem(t *testing.T, b []byte, r record, err error) {
	t.Helper()
	k := store.Key{PK: "p", SK: "s"}
	for _, now := range []int64{1, r.E, r.E + 1, 1 << 62} {
		it, live, ierr := readItem(k, b, now)
		if (ierr != nil) != (err != nil) {
			t.Fatalf("readItem error %v, decodeRecord error %v", ierr, err)
		}
		if err != nil {
			continue
		}
		if live != r.live(time.Unix(0, now)) {
			t.Fatalf("at %d: live %v, record live %v", now, live, !live)
		}
		if want := fromRecord(k, r); live && !reflect.DeepEqual(it, want) {
			t.Fatalf("readItem\n got %+v\nwant %+v", it, want)
		}
		// parseHead (GetData) agrees with readItem on all it returns.
		h := parseHead(b)
		data, v, dlive, derr := h.data, h.version, h.err == nil && h.live(now), h.err
		if (derr != nil) != (ierr != nil) || dlive != live || v != it.Version || !bytes.Equal(data, it.Data) || (data == nil) != (it.Data == nil) {
			t.Fatalf("parseHead %q v%d live %v (%v); readItem %q v%d live %v (%v)", data, v, dlive, derr, it.Data, it.Version, live, ierr)
		}
	}
}

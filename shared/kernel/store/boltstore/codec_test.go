package boltstore

import (
	"encoding/json"
	"reflect"
	"testing"
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
		if err == nil && len(b) > 0 && b[0] == formatBinary {
			if again, err := decodeRecord(encodeRecord(r)); err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("re-encoding a decoded record: %v", err)
			}
		}
	})
}

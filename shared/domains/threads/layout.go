package threads

import (
	"crypto/sha256"
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Store layout. Every key starts with "thr" so nothing collides with other
// modules.
//
//	thread      PK thr#{dep}            SK t#{thread}   data: threadRecord
//	            gsi1 thr#{dep}          created_at#{thread}
//	            gsi2 thr#{dep}          updated_at#{thread}
//	            gsi3 thr#{dep}          state_updated_at#{thread}
//	            gsi4 thr#{dep}          status#{thread}
//	            gsi5 thr#{dep}#{status} updated_at#{thread}
//	companion   PK thr#{dep}            SK s#{thread}   data: companion
//	            gsi1 thrs#{dep}#{status} created_at#{thread}
//	            gsi2 thrs#{dep}#{status} state_updated_at#{thread}
//	            gsi3 thrx#{dep}          expires_at#{thread}       (TTL delete)
//	            gsi4 thrttl#{shard}      expires_at#{dep}#{thread} (any TTL)
//	pair member PK thrm#{dep}#{pair}    SK created_at#{thread}  (no data)
//	counters    PK thrn#{dep}           SK c#{shard}          Nums: all, per status, ovf, vovf
//	                                    SK p#{pair}#{shard}   Nums: all, per status
//	chain       PK thrc#{chain}         SK #chain       data: chainRecord, Nums: refs
//	checkpoint  PK thrc#{chain}         SK cp#{id}      data: checkpoint or blob ref
//	gc task     PK thrgc                SK {chain}
//
// Together the thread and companion items index the nine orderings search
// needs (four sort columns plus status, with and without a status filter)
// and the thread_id order is the base table's. A pair is one top-level
// metadata key with its value, or one top-level key of the state values
// with its value; its members and counters serve metadata and values
// filters and their counts.

const (
	// DefaultCounterShards is how many items each count is spread over
	// (Options.CounterShards): on DynamoDB, concurrent creates then
	// rarely update the same counter item.
	DefaultCounterShards = 8
	// ttlShards spread the TTL index (thrttl#{shard}); the sweeper reads
	// each of them.
	ttlShards = 8
	// maxIndexedPairs bounds the metadata pairs indexed per thread, so one
	// thread write stays within a transaction's 100 operations.
	maxIndexedPairs = 16
	// maxPairKey and maxPairValue bound what is indexed: larger keys or
	// values are matched by reading candidates.
	maxPairKey   = 256
	maxPairValue = 512
	// maxIndexedValuePairs bounds the values pairs indexed per thread: a
	// state update may change each (four operations: two counters, a
	// member removed, one added).
	maxIndexedValuePairs = 8
)

func threadKey(dep, tid string) store.Key    { return store.Key{PK: "thr#" + dep, SK: "t#" + tid} }
func companionKey(dep, tid string) store.Key { return store.Key{PK: "thr#" + dep, SK: "s#" + tid} }

// pairMemberKey orders a pair's members by creation time (which never
// changes), so a search on one pair sorted by created_at reads only the
// page it returns.
func pairMemberKey(dep, pair string, created time.Time, tid string) store.Key {
	return store.Key{PK: pairMembersPK(dep, pair), SK: sortTime(created) + "#" + tid}
}
func pairMembersPK(dep, pair string) string { return "thrm#" + dep + "#" + pair }

// memberThread is the thread id of a pair member's sort key.
func memberThread(sk string) string   { return sk[strings.LastIndexByte(sk, '#')+1:] }
func counterPK(dep string) string     { return "thrn#" + dep }
func chainKey(chain string) store.Key { return store.Key{PK: "thrc#" + chain, SK: "#chain"} }
func checkpointKey(chain, id string) store.Key {
	return store.Key{PK: "thrc#" + chain, SK: "cp#" + id}
}
func gcKey(chain string) store.Key { return store.Key{PK: "thrgc", SK: chain} }

// shardOf is s's shard among n.
func shardOf(s string, n int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return strconv.Itoa(int(h.Sum32() % uint32(n)))
}

// companion is the small projection a companion item carries, enough to
// filter without reading the thread item.
type companion struct {
	Status    string         `json:"status"`
	Metadata  map[string]any `json:"metadata"`
	TTLDelete bool           `json:"ttl_delete,omitempty"`
	ExpiresAt time.Time      `json:"expires_at,omitzero"`
}

func threadItems(t *threadRecord) (store.Item, store.Item, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return store.Item{}, store.Item{}, err
	}
	dep, tid := t.Deployment, t.ID
	all := "thr#" + dep
	th := store.Item{
		Key:  threadKey(dep, tid),
		Data: data,
		Indexes: map[string]store.IndexKey{
			"gsi1": {PK: all, SK: sortTime(t.CreatedAt) + "#" + tid},
			"gsi2": {PK: all, SK: sortTime(t.UpdatedAt) + "#" + tid},
			"gsi3": {PK: all, SK: sortTime(t.StateUpdatedAt) + "#" + tid},
			"gsi4": {PK: all, SK: t.Status + "#" + tid},
			"gsi5": {PK: all + "#" + t.Status, SK: sortTime(t.UpdatedAt) + "#" + tid},
		},
	}
	c := companion{Status: t.Status, Metadata: t.Metadata}
	byStatus := "thrs#" + dep + "#" + t.Status
	comp := store.Item{
		Key: companionKey(dep, tid),
		Indexes: map[string]store.IndexKey{
			"gsi1": {PK: byStatus, SK: sortTime(t.CreatedAt) + "#" + tid},
			"gsi2": {PK: byStatus, SK: sortTime(t.StateUpdatedAt) + "#" + tid},
		},
	}
	if t.TTL != nil {
		c.ExpiresAt = t.TTL.ExpiresAt
		comp.Indexes["gsi4"] = store.IndexKey{PK: "thrttl#" + shardOf(tid, ttlShards), SK: sortTime(t.TTL.ExpiresAt) + "#" + dep + "#" + tid}
		if t.TTL.Strategy == TTLDelete {
			c.TTLDelete = true
			comp.Indexes["gsi3"] = store.IndexKey{PK: "thrx#" + dep, SK: sortTime(t.TTL.ExpiresAt) + "#" + tid}
		}
	}
	if comp.Data, err = json.Marshal(c); err != nil {
		return store.Item{}, store.Item{}, err
	}
	return th, comp, nil
}

// pairs returns the indexed metadata pairs of md (hash by key), and
// whether some indexable pairs were left out.
func pairs(md map[string]any) (map[string]string, bool) {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]string{}
	overflow := false
	for _, k := range keys {
		h, ok := pairHash(k, md[k])
		if !ok {
			continue
		}
		if len(out) == maxIndexedPairs {
			overflow = true
			break
		}
		out[k] = h
	}
	return out, overflow
}

// pairHash names the pair (k, v), or reports it is too large to index.
func pairHash(k string, v any) (string, bool) {
	if len(k) > maxPairKey {
		return "", false
	}
	cv := canonicalJSON(v)
	if len(cv) > maxPairValue {
		return "", false
	}
	sum := sha256.Sum256(append(append([]byte(k), 0), cv...))
	return shortHash(sum[:]), true
}

// valuePairs returns the indexed pairs of state values (hash by key), and
// whether some keys were left out. Unlike metadata, a value of any size is
// hashed (message lists are the values filtered on most), and the hash
// has its own domain: a leading 0xff byte, which no key (valid UTF-8, as
// JSON decoding leaves it) starts with.
func valuePairs(values map[string]any) (map[string]string, bool) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]string{}
	overflow := false
	for _, k := range keys {
		if len(k) > maxPairKey {
			overflow = true
			continue
		}
		if len(out) == maxIndexedValuePairs {
			overflow = true
			break
		}
		out[k] = valuePairHash(k, values[k])
	}
	return out, overflow
}

// valuePairHash names the values pair (k, v).
func valuePairHash(k string, v any) string {
	sum := sha256.Sum256(append(append(append([]byte{0xff}, k...), 0), canonicalJSON(v)...))
	return shortHash(sum[:])
}

// indexedPairs is every pair of a thread the pair index holds: its
// metadata pairs and its values pairs.
func indexedPairs(t *threadRecord) (md map[string]string, mdOvf bool, all []string) {
	md, mdOvf = pairs(t.Metadata)
	for _, h := range md {
		all = append(all, h)
	}
	for _, h := range t.ValuePairs {
		all = append(all, h)
	}
	return md, mdOvf, all
}

// counterOps returns the counter updates for a thread moving from
// (oldStatus, oldPairs, oldOverflow) to the new ones; "" status means
// absent (creation or deletion).
//
// A count is the sum of its shards, whatever their number: a thread may be
// counted in one shard and uncounted in another (a store written with
// another shard count), so a shard alone may go negative.
func counterOps(shards int, dep, tid string, created time.Time, oldStatus string, oldPairs []string, oldOvf, oldVOvf bool, newStatus string, newPairs []string, newOvf, newVOvf bool) []store.TxOp {
	shard := shardOf(tid, shards)
	var ops []store.TxOp
	delta := func(status string, n int64) map[string]int64 {
		if status == "" {
			return nil
		}
		return map[string]int64{"all": n, status: n}
	}
	merge := func(a, b map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range a {
			out[k] += v
		}
		for k, v := range b {
			out[k] += v
		}
		for k, v := range out {
			if v == 0 {
				delete(out, k)
			}
		}
		return out
	}
	main := merge(delta(oldStatus, -1), delta(newStatus, 1))
	if oldOvf != newOvf {
		if newOvf {
			main["ovf"]++
		} else {
			main["ovf"]--
		}
	}
	if oldVOvf != newVOvf {
		if newVOvf {
			main["vovf"]++
		} else {
			main["vovf"]--
		}
	}
	if len(main) > 0 {
		ops = append(ops, store.TxOp{Kind: store.OpUpdate, Update: store.Update{
			Key: store.Key{PK: counterPK(dep), SK: "c#" + shard}, Add: main}})
	}
	hashes := map[string]bool{}
	oldSet, newSet := map[string]bool{}, map[string]bool{}
	for _, h := range oldPairs {
		oldSet[h], hashes[h] = true, true
	}
	for _, h := range newPairs {
		newSet[h], hashes[h] = true, true
	}
	sorted := make([]string, 0, len(hashes))
	for h := range hashes {
		sorted = append(sorted, h)
	}
	sort.Strings(sorted)
	for _, h := range sorted {
		var a, b map[string]int64
		if oldSet[h] {
			a = delta(oldStatus, -1)
		}
		if newSet[h] {
			b = delta(newStatus, 1)
		}
		d := merge(a, b)
		if len(d) > 0 {
			ops = append(ops, store.TxOp{Kind: store.OpUpdate, Update: store.Update{
				Key: store.Key{PK: counterPK(dep), SK: "p#" + h + "#" + shard}, Add: d}})
		}
		switch {
		case oldSet[h] && !newSet[h]:
			ops = append(ops, store.TxOp{Kind: store.OpDelete, Key: pairMemberKey(dep, h, created, tid)})
		case newSet[h] && !oldSet[h]:
			ops = append(ops, store.TxOp{Kind: store.OpPut, Item: store.Item{Key: pairMemberKey(dep, h, created, tid), Data: []byte("{}")}})
		}
	}
	return ops
}

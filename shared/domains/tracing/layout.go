package tracing

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Store layout. Every key starts with "tr" so nothing collides with other
// domains; every key that addresses workspace data carries the workspace
// id, so another workspace's run, project or feedback is simply absent.
//
//	run          PK trrun#{ws}#{run}       SK run       data: runRecord; Nums: billed
//	             gsi1 trp#{ws}#{project}          {start}#{run}   every run of a project
//	             gsi2 trt#{ws}#{trace}            {start}#{run}   the runs of a trace
//	             gsi3 trc#{ws}#{parent}           {start}#{run}   the children of a run
//	             gsi4 trh#{ws}#{project}#{thread} {start}#{run}   the runs of a thread
//	             gsi5 trr#{ws}#{project}          {start}#{run}   root runs (traces)
//	facet entry  PK trf#{ws}#{project}#{facet}  SK {start}#{run}  (no data)
//	             facets: t:{run_type} n:{name} g:{tag} e (has an error)
//	             m:{hash of metadata key and value} f:{feedback key}
//	example      PK trx#{ws}#{example}          SK {start}#{run}  (no data)
//	dangling     PK trdang#{ws}#{parent}        SK {run}  a run whose dotted order waits for parent's
//	project      PK trproj#{ws}  SK i#{project}  data: projectRecord
//	             gsi1 trpn#{ws}           {name}            by name
//	             gsi2 trpt#{ws}           {start}#{project} by creation time
//	             gsi3 trpd#{ws}#{dataset} {start}#{project} experiments of a dataset
//	             gsi4 trpf#{ws}           {start}#{project} reference-free projects
//	             gsi5 trpev               {ws}#{project}    an event not yet published
//	project name PK trpname#{ws}  SK {name}     (claims the name; data: project id)
//	stats        PK trps#{ws}#{project}  SK stats  Nums: counters and histograms
//	thread       PK trth#{ws}#{project}  SK {thread}  data: threadRecord; Nums: runs, roots, tokens
//	             gsi1 trthl#{ws}#{project} {last start}#{thread}  by last activity
//	feedback     PK trfb#{ws}#{feedback}  SK fb  data: feedbackRecord
//	             gsi1 trfbr#{ws}#{run}     {created}#{feedback}
//	             gsi2 trfbw#{ws}           {created}#{feedback}
//	             gsi3 trfbk#{ws}#{key}     {created}#{feedback}
//	             gsi4 trfbp#{ws}#{project} {created}#{feedback}
//	usage outbox PK trbill#{shard}  SK {event id}  data: UsageEvent not yet published
//	segment day  PK trsegx  SK {expiry day}#{ws}#{folder}  (a blob folder to delete after that day)
//
// Blob storage:
//
//	tracing/ingest/{ws}/{unix ms}-{uuid}           a raw ingest batch until applied
//	tracing/runs/{ws}/{folder}/{expiry day}/...    segments of large fields and attachments
//
// {folder} is the project id, or "_partial" for a run not yet assigned to
// a project. {start} is the run's start time in the fixed-width form of
// sortTime, so a key's order is time order and every time-ordered
// partition shares one sort-key format (merging and intersecting them is
// a comparison of strings).

const (
	runSK = "run"
	// partialFolder holds blobs of runs whose project is not known yet.
	partialFolder = "_partial"
)

func runKey(ws, id string) store.Key { return store.Key{PK: "trrun#" + ws + "#" + id, SK: runSK} }

func projectRunsPK(ws, p string) string        { return "trp#" + ws + "#" + p }
func traceRunsPK(ws, trace string) string      { return "trt#" + ws + "#" + trace }
func childRunsPK(ws, parent string) string     { return "trc#" + ws + "#" + parent }
func threadRunsPK(ws, p, thread string) string { return "trh#" + ws + "#" + p + "#" + thread }
func rootRunsPK(ws, p string) string           { return "trr#" + ws + "#" + p }
func facetPK(ws, p, facet string) string       { return "trf#" + ws + "#" + p + "#" + facet }
func examplePK(ws, example string) string      { return "trx#" + ws + "#" + example }
func danglingPK(ws, parent string) string      { return "trdang#" + ws + "#" + parent }
func danglingKey(ws, parent, run string) store.Key {
	return store.Key{PK: danglingPK(ws, parent), SK: run}
}

func projectKey(ws, id string) store.Key { return store.Key{PK: "trproj#" + ws, SK: "i#" + id} }
func projectNameKey(ws, name string) store.Key {
	return store.Key{PK: "trpname#" + ws, SK: nameKey(name)}
}
func projectByNamePK(ws string) string       { return "trpn#" + ws }
func projectByTimePK(ws string) string       { return "trpt#" + ws }
func projectByDatasetPK(ws, d string) string { return "trpd#" + ws + "#" + d }
func projectRefFreePK(ws string) string      { return "trpf#" + ws }

const pendingEventPK = "trpev"

func statsKey(ws, p string) store.Key { return store.Key{PK: "trps#" + ws + "#" + p, SK: "stats"} }
func threadKey(ws, p, thread string) store.Key {
	return store.Key{PK: "trth#" + ws + "#" + p, SK: nameKey(thread)}
}
func threadsByActivityPK(ws, p string) string { return "trthl#" + ws + "#" + p }

func feedbackKey(ws, id string) store.Key   { return store.Key{PK: "trfb#" + ws + "#" + id, SK: "fb"} }
func feedbackByRunPK(ws, run string) string { return "trfbr#" + ws + "#" + run }
func feedbackByWsPK(ws string) string       { return "trfbw#" + ws }
func feedbackByKeyPK(ws, k string) string   { return "trfbk#" + ws + "#" + facetText(k) }
func feedbackByProjPK(ws, p string) string  { return "trfbp#" + ws + "#" + p }

const segmentDayPK = "trsegx"

// usageShards spreads the usage outbox over partitions.
const usageShards = 8

func usagePK(shard int) string { return "trbill#" + strconv.Itoa(shard) }

func usageKey(eventID string) store.Key {
	h := sha256.Sum256([]byte(eventID))
	return store.Key{PK: usagePK(int(h[0]) % usageShards), SK: eventID}
}

// sortTime is the fixed-width, lexically ordered form of a time used in
// sort keys.
func sortTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// runSortKey orders runs by start time, then id.
func runSortKey(start time.Time, id string) string { return sortTime(start) + "#" + id }

// runIDOfSortKey returns the run id at the end of a sort key.
func runIDOfSortKey(sk string) string {
	if i := strings.LastIndexByte(sk, '#'); i >= 0 {
		return sk[i+1:]
	}
	return sk
}

// facetText keeps short values readable and hashes long ones, so keys stay
// far below DynamoDB's key size limits whatever a client sends.
func facetText(s string) string {
	if len(s) <= 64 && !strings.ContainsAny(s, "#\x00") {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(h[:16])
}

// nameKey is the sort-key form of a free-form name (names longer than a
// key allows are hashed; the record keeps the real name).
func nameKey(s string) string {
	if len(s) <= 512 {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(h[:])
}

// Facets of a run.
func facetRunType(t string) string  { return "t:" + facetText(t) }
func facetName(n string) string     { return "n:" + facetText(n) }
func facetTag(t string) string      { return "g:" + facetText(t) }
func facetFeedback(k string) string { return "f:" + facetText(k) }

const facetError = "e"

// facetMeta is the facet of one metadata pair; value is the canonical text
// of the value (fql.Canonical).
func facetMeta(key, value string) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(value))
	return "m:" + hex.EncodeToString(h.Sum(nil)[:16])
}

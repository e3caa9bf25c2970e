package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/tracing"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/google/uuid"
)

// benchEnv is an env for benchmarks: no consumer runs (the benchmarks
// apply batches themselves), requests go straight to the mux so the time
// measured is the server's.
type benchEnv struct {
	*env
	mux *web.Mux
}

func newBenchEnv(b *testing.B, dir string) *benchEnv {
	return benchOf(newEnv(b, envOptions{dir: dir}))
}

func benchOf(e *env) *benchEnv {
	e.bus.mu.Lock()
	e.bus.drop[tracing.TopicIngest] = true
	e.bus.mu.Unlock()
	mux := web.NewMux()
	api.Mount(mux, tracing.Routes, tracing.NewHandler(e.svc), api.Edge{Auth: e.id})
	return &benchEnv{env: e, mux: mux}
}

func (b *benchEnv) serve(method, path string, body []byte, ct string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("X-Api-Key", b.key)
	req.Header.Set("Content-Type", ct)
	rec := httptest.NewRecorder()
	b.mux.ServeHTTP(rec, req)
	return rec
}

// ingestedKeys returns the blob keys of the batches queued so far (the
// messages the consumer would receive), and forgets them.
func (b *benchEnv) ingestedKeys() []string {
	b.bus.mu.Lock()
	defer b.bus.mu.Unlock()
	var keys []string
	for _, raw := range b.bus.events[tracing.TopicIngest] {
		var m tracing.IngestMessage
		_ = json.Unmarshal(raw, &m)
		keys = append(keys, m.Key)
	}
	b.bus.events[tracing.TopicIngest] = nil
	return keys
}

// applyAll applies stored batches with the consumer's concurrency.
func (b *benchEnv) applyAll(tb testing.TB, keys []string, workers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(keys) {
					return
				}
				if err := b.svc.ApplyStored(context.Background(), keys[i]); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// cpuTime is the process's user and system CPU time so far: on a shared
// machine, work per CPU-second is steadier than work per wall-second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var input1KB = strings.Repeat("lorem ipsum ", 85) // ~1 KB

// newV7 is a time-ordered id, as the JS SDK makes them.
func newV7() string { return uuid.Must(uuid.NewV7()).String() }

// traceBatch is a multipart body of 100 runs: 10 traces of a root and 9
// children, each run with 1 KB of inputs, outputs and metadata (a user of
// users values, a thread of threads values) from run number n on.
func traceBatch(n int, start time.Time, project string, users, threads int) ([]byte, string) {
	var parts []part
	for t := 0; t < 10; t++ {
		root := newV7()
		rootStart := start.Add(time.Duration(n+t*10) * time.Millisecond)
		dRoot := seg(rootStart, root)
		for i := 0; i < 10; i++ {
			k := n + t*10 + i
			id, parent, dotted := root, "", dRoot
			st := rootStart.Add(time.Duration(i) * time.Microsecond)
			if i > 0 {
				id, parent = newV7(), root
				dotted = dRoot + "." + seg(st, id)
			}
			run := map[string]any{"id": id, "trace_id": root, "dotted_order": dotted, "name": "step", "run_type": []string{"chain", "llm", "tool"}[i%3],
				"start_time": ts(st), "end_time": ts(st.Add(time.Duration(k%900+100) * time.Millisecond)), "session_name": project}
			if parent != "" {
				run["parent_run_id"] = parent
			}
			parts = append(parts,
				jsonPart("post."+id, run),
				jsonPart("post."+id+".inputs", map[string]any{"text": input1KB}),
				jsonPart("post."+id+".outputs", map[string]any{"answer": "ok", "usage_metadata": map[string]any{"input_tokens": 20, "output_tokens": 5}}),
				jsonPart("post."+id+".extra", map[string]any{"metadata": map[string]any{
					"user": fmt.Sprintf("u-%d", k%users), "thread_id": fmt.Sprintf("t-%d", (k*7)%threads), "ls_run_depth": i}}),
			)
		}
	}
	return multipartBody(parts)
}

// BenchmarkIngestMultipart measures POST /runs/multipart answered (batch
// validated, written and synced to blob storage, key queued) with 100 runs
// of 1 KB inputs per request; the consumer's apply rate is measured by
// BenchmarkApplyMultipart.
func BenchmarkIngestMultipart(b *testing.B) {
	be := newBenchEnv(b, "")
	start := time.Now().UTC().Add(-time.Hour)
	body, ct := traceBatch(0, start, "bench-ingest", 1000, 1000)
	b.SetBytes(int64(len(body)))
	// Several clients at once, as SDKs send (each client's requests one
	// after another).
	b.SetParallelism(2)
	b.ResetTimer()
	began, cpu := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if rec := be.serve("POST", "/runs/multipart", body, ct); rec.Code != 202 {
				b.Errorf("%d %s", rec.Code, rec.Body.String())
				return
			}
		}
	})
	b.ReportMetric(float64(100*b.N)/time.Since(began).Seconds(), "runs/s")
	b.ReportMetric(float64(100*b.N)/(cpuTime()-cpu).Seconds(), "runs/cpu-s")
}

func applyWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("TRACING_BENCH_WORKERS")); err == nil && n > 0 {
		return n
	}
	return 4
}

// BenchmarkApplyMultipart measures the consumer: stored batches of 100
// runs applied (project, runs, entries, statistics, thread summaries,
// usage) with 4 concurrent handlers, as the local queue runs them.
func BenchmarkApplyMultipart(b *testing.B) {
	be := newBenchEnv(b, os.Getenv("TRACING_BENCH_DIR"))
	start := time.Now().UTC().Add(-time.Hour)
	for i := 0; i < b.N; i++ {
		body, ct := traceBatch(i*100, start, "bench-apply", 1000, 1000)
		if rec := be.serve("POST", "/runs/multipart", body, ct); rec.Code != 202 {
			b.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
	}
	keys := be.ingestedKeys()
	b.ResetTimer()
	began, cpu := time.Now(), cpuTime()
	be.applyAll(b, keys, applyWorkers())
	b.ReportMetric(float64(100*b.N)/time.Since(began).Seconds(), "runs/s")
	b.ReportMetric(float64(100*b.N)/(cpuTime()-cpu).Seconds(), "runs/cpu-s")
}

// The 200,000-run project of the query benchmarks, seeded once through
// the ingest path (on tmpfs when /dev/shm exists, to seed faster).
var seeded struct {
	once    sync.Once
	be      *benchEnv
	project string
	err     error
}

const (
	seedRuns    = 200000
	seedUsers   = 2000 // 100 runs per user
	seedThreads = 2000 // 100 runs per thread
)

func seed200k(b *testing.B) (*benchEnv, string) {
	seeded.once.Do(func() {
		dir := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			if d, err := os.MkdirTemp("/dev/shm", "tracing-bench-"); err == nil {
				dir = d
			}
		}
		if dir == "" {
			d, err := os.MkdirTemp("", "tracing-bench-")
			if err != nil {
				seeded.err = err
				return
			}
			dir = d
		}
		// The data outlives the benchmark that seeded it (the others reuse
		// it): it is removed when the process ends.
		e, cleanup, err := buildEnv(envOptions{dir: dir})
		if err != nil {
			seeded.err = err
			return
		}
		atExit = append(atExit, cleanup, func() { _ = os.RemoveAll(dir) })
		be := benchOf(e)
		start := time.Now().UTC().Add(-48 * time.Hour)
		began := time.Now()
		for n := 0; n < seedRuns; n += 100 {
			body, ct := traceBatch(n, start, "bench-200k", seedUsers, seedThreads)
			if rec := be.serve("POST", "/runs/multipart", body, ct); rec.Code != 202 {
				seeded.err = fmt.Errorf("%d %s", rec.Code, rec.Body.String())
				return
			}
			if n%10000 == 9900 {
				be.applyAll(b, be.ingestedKeys(), 4)
			}
		}
		be.applyAll(b, be.ingestedKeys(), 4)
		b.Logf("seeded %d runs in %v", seedRuns, time.Since(began).Round(time.Second))
		l := be.serve("GET", "/sessions?name=bench-200k&include_stats=true", nil, "")
		var ps []map[string]any
		_ = json.Unmarshal(l.Body.Bytes(), &ps)
		if len(ps) != 1 || ps[0]["run_count"] != float64(seedRuns) {
			seeded.err = fmt.Errorf("seeded project: %s", l.Body.String())
			return
		}
		seeded.be, seeded.project = be, ps[0]["id"].(string)
	})
	if seeded.err != nil {
		b.Fatal(seeded.err)
	}
	return seeded.be, seeded.project
}

// measure runs one request b.N times and reports its p50 server time and
// the items the query reads (for the same body, through QueryCost).
func measure(b *testing.B, be *benchEnv, method, path string, body []byte, wantRuns int, costBody map[string]any) {
	if costBody != nil {
		got, plan, read, err := be.svc.QueryCost(context.Background(), be.ws, costBody)
		if err != nil || len(got) != wantRuns {
			b.Fatalf("cost: %d runs, %v", len(got), err)
		}
		b.ReportMetric(float64(read), "items-read")
		b.ReportMetric(float64(len(got)), "runs")
		b.Logf("plan %s: %d items read for %d runs", plan, read, len(got))
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rec := be.serve(method, path, body, "application/json")
		times = append(times, time.Since(t0))
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		if i == 0 {
			var page tracing.RunPage
			_ = json.Unmarshal(rec.Body.Bytes(), &page)
			if len(page.Runs) != wantRuns {
				b.Fatalf("%d runs, want %d", len(page.Runs), wantRuns)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkQueryMetadata200k: one project of 200,000 runs, a metadata
// pair filter matching 100 of them, limit 100, the SDK's default select
// (inputs and outputs included).
func BenchmarkQueryMetadata200k(b *testing.B) {
	be, project := seed200k(b)
	q := map[string]any{"session": []string{project}, "limit": 100,
		"filter": `and(eq(metadata_key, "user"), eq(metadata_value, "u-1234"))`}
	body, _ := json.Marshal(q)
	measure(b, be, "POST", "/runs/query", body, 100, q)
}

// BenchmarkQueryMetadata200kNoIO is the same query selecting the fields
// fetch_runs shows without inputs and outputs (no blob reads).
func BenchmarkQueryMetadata200kNoIO(b *testing.B) {
	be, project := seed200k(b)
	q := map[string]any{"session": []string{project}, "limit": 100,
		"filter": `and(eq(metadata_key, "user"), eq(metadata_value, "u-1234"))`,
		"select": []string{"id", "name", "run_type", "start_time", "end_time", "status", "total_tokens", "thread_id"}}
	body, _ := json.Marshal(q)
	measure(b, be, "POST", "/runs/query", body, 100, q)
}

// BenchmarkThreadRuns200k: the 100 runs of one thread among 200,000, in
// order, with inputs and outputs (what get_thread_history reads).
func BenchmarkThreadRuns200k(b *testing.B) {
	be, project := seed200k(b)
	measure(b, be, "GET", "/sessions/"+project+"/threads/t-77/runs?limit=100", nil, 100,
		map[string]any{"session": []string{project}, "limit": 100, "order": "asc", "filter": `eq(thread_id, "t-77")`})
}

// BenchmarkThreadHistoryFilter200k: the tool server's get_thread_history
// query (three metadata keys, one value, run_type llm) among 200,000.
func BenchmarkThreadHistoryFilter200k(b *testing.B) {
	be, project := seed200k(b)
	q := map[string]any{"session": []string{project}, "limit": 100, "run_type": "llm",
		"filter": `and(in(metadata_key, ["session_id", "conversation_id", "thread_id"]), eq(metadata_value, "t-77"))`}
	body, _ := json.Marshal(q)
	want, _, _, _ := be.svc.QueryCost(context.Background(), be.ws, q)
	measure(b, be, "POST", "/runs/query", body, len(want), q)
}

// BenchmarkQueryProjectPage200k: the newest 100 runs of the project.
func BenchmarkQueryProjectPage200k(b *testing.B) {
	be, project := seed200k(b)
	q := map[string]any{"session": []string{project}, "limit": 100}
	body, _ := json.Marshal(q)
	measure(b, be, "POST", "/runs/query", body, 100, q)
}

// BenchmarkProjectStats200k: GET /sessions?include_stats for the project
// (counters and histograms: two items, whatever the run count).
func BenchmarkProjectStats200k(b *testing.B) {
	be, _ := seed200k(b)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rec := be.serve("GET", "/sessions?name=bench-200k&include_stats=true", nil, "")
		times = append(times, time.Since(t0))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}

package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/store/dynamostore"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	minidyn "github.com/truora/minidyn/server"
)

// deployed is a running local process with one DEPLOYED deployment and
// one thread in it, for benchmarks of the request path as a client sees
// it: the edge (authentication), the deployment lookup, the handler, JSON
// encoding and the access log (JSON, as in production, to io.Discard).
type deployed struct {
	h      http.Handler
	dep    string
	thread string
	st     store.Store
}

func deploy(b *testing.B) deployed { return deployOn(b, nil, "info") }

// deployOn is deploy with the platform's store replaced by st (nil: the
// local bbolt store), logging at level.
func deployOn(b *testing.B, st store.Store, level string) deployed {
	b.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: b.TempDir(), Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: level}
	ctx := context.Background()
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		b.Fatal(err)
	}
	p, err := compose.Open(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: lvl})))
	if err != nil {
		b.Fatal(err)
	}
	if st != nil {
		// Every module over DynamoDB; the local queue stays in bbolt.
		p.Store = st
		p.Identity = identity.New(st)
		p.Identity.SetKeyCacheTTL(cfg.CacheFor())
	}
	pr, err := compose.Build(ctx, p, catalog.Groups()...)
	if err != nil {
		p.Close()
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pr.RunBackground(ctx) }()
	b.Cleanup(func() { cancel(); <-done; pr.Close() })
	if _, err := pr.P.Identity.Bootstrap(ctx, adminKey); err != nil {
		b.Fatal(err)
	}
	h := pr.Handler()
	repo := gittest.NewRepo(b, filepath.Join(b.TempDir(), "repo"))
	repo.Commit("agent", gittest.Agent("agent"))
	body := `{"name":"bench","source":"repo_host","source_config":{"repo_url":"` + repo.Dir + `","deployment_type":"dev","build_on_push":false},` +
		`"source_revision_config":{"repo_ref":"main","graph_config_path":"langgraph.json"},"secrets":[]}`
	var d struct {
		ID  string `json:"id"`
		Rev string `json:"latest_revision_id"`
	}
	call(b, h, "POST", "/v2/deployments", body, 201, &d)
	for deadline := time.Now().Add(time.Minute); ; {
		var r struct{ Status string }
		call(b, h, "GET", "/v2/deployments/"+d.ID+"/revisions/"+d.Rev, "", 200, &r)
		if r.Status == "DEPLOYED" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("revision %s", r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	call(b, h, "POST", "/deployments/"+d.ID+"/threads", `{"metadata":{"graph_id":"agent"},"supersteps":[`+
		`{"updates":[{"values":{},"as_node":"__input__"}]},`+
		`{"updates":[{"values":{"messages":[{"type":"human","content":"hi"}]},"as_node":"__start__"}]}]}`, 200, &th)
	return deployed{h: h, dep: d.ID, thread: th.ThreadID, st: p.Store}
}

func call(b *testing.B, h http.Handler, method, path, body string, want int, out any) {
	b.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Api-Key", adminKey)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRequest(b *testing.B, h http.Handler, method, path, body string) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("X-Api-Key", adminKey)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Errorf("%d %s", rec.Code, rec.Body)
				return
			}
		}
	})
}

// The hot reads of the thread API through the whole handler stack.
func BenchmarkThreadGet(b *testing.B) {
	d := deploy(b)
	benchRequest(b, d.h, "GET", "/deployments/"+d.dep+"/threads/"+d.thread, "")
}

func BenchmarkThreadState(b *testing.B) {
	d := deploy(b)
	benchRequest(b, d.h, "GET", "/deployments/"+d.dep+"/threads/"+d.thread+"/state", "")
}

func BenchmarkThreadCreate(b *testing.B) {
	d := deploy(b)
	benchRequest(b, d.h, "POST", "/deployments/"+d.dep+"/threads", `{"metadata":{"graph_id":"agent"}}`)
}

// BenchmarkThreadCreate32 is bench-peer's create: 32 concurrent clients,
// so that writers share commits (group commit) as they do under load,
// each thread with a graph_id and one of 50 owners. It reports the writes
// that shared a commit and the pages each commit wrote; "owners=1"
// shows what the owners' 50 places in the key space cost.
func BenchmarkThreadCreate32(b *testing.B) {
	for _, owners := range []int{50, 1} {
		b.Run(fmt.Sprintf("owners=%d", owners), func(b *testing.B) {
			d := deploy(b)
			bodies := make([]string, owners)
			for i := range bodies {
				bodies[i] = fmt.Sprintf(`{"metadata":{"graph_id":"agent","owner":"user-%d"}}`, i)
			}
			cs, _ := d.st.(interface{ CommitStats() boltstore.CommitStats })
			var before boltstore.CommitStats
			if cs != nil {
				before = cs.CommitStats()
			}
			var n atomic.Int64
			b.SetParallelism(16) // × GOMAXPROCS 2
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := bodies[int(n.Add(1))%owners]
					req := httptest.NewRequest("POST", "/deployments/"+d.dep+"/threads", strings.NewReader(body))
					req.Header.Set("X-Api-Key", adminKey)
					rec := httptest.NewRecorder()
					d.h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Errorf("%d %s", rec.Code, rec.Body)
						return
					}
				}
			})
			b.StopTimer()
			if cs != nil {
				after := cs.CommitStats()
				if commits := after.Commits - before.Commits; commits > 0 {
					b.ReportMetric(float64(after.Writes-before.Writes)/float64(commits), "writes/commit")
					b.ReportMetric(float64(after.Bytes-before.Bytes)/float64(commits), "logbytes/commit")
				}
			}
		})
	}
}

// The same reads over loopback HTTP (server and client in this process):
// what a load generator sees, connection handling and parsing included.
func BenchmarkThreadGetHTTP(b *testing.B) {
	d := deploy(b)
	srv := httptest.NewServer(d.h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	url := srv.URL + "/deployments/" + d.dep + "/threads/" + d.thread
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("X-Api-Key", adminKey)
			resp, err := cl.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("%d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkDynamoDBCapacity runs the whole request path over DynamoDB
// (minidyn in this process; it reports no consumed capacity, so the
// store charges DynamoDB's published rules on the item sizes) and
// reports per request the DynamoDB calls and the read and write capacity
// units: a thread GET is one GetItem of the thread, authorization and the
// deployment coming from the caches.
func BenchmarkDynamoDBCapacity(b *testing.B) {
	srv := httptest.NewServer(minidyn.NewServer())
	defer srv.Close()
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Logger: logging.Nop{},
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err := dynamostore.CreateTable(context.Background(), c, "capacity"); err != nil {
		b.Fatal(err)
	}
	dyn := dynamostore.New(c, "capacity")
	d := deployOn(b, dyn, "info")
	base := "/deployments/" + d.dep + "/threads"
	// Search runs over 600 threads of bench-peer's shape: 50 owners (minidyn slows down as its table grows).
	for i := 0; i < 600; i++ {
		call(b, d.h, "POST", base, fmt.Sprintf(`{"metadata":{"graph_id":"agent","owner":"user-%d"},"supersteps":[`+
			`{"updates":[{"values":{},"as_node":"__input__"}]},`+
			`{"updates":[{"values":{"messages":[{"type":"human","content":"hello %d"}]},"as_node":"__start__"}]}]}`, i%50, i), 200, nil)
	}
	for _, w := range []struct{ name, method, path, body string }{
		{"get", "GET", base + "/" + d.thread, ""},
		{"state", "GET", base + "/" + d.thread + "/state", ""},
		{"create", "POST", base, `{"metadata":{"graph_id":"agent","owner":"user-1"}}`},
		{"create_supersteps", "POST", base, `{"metadata":{"graph_id":"agent","owner":"user-1"},"supersteps":[` +
			`{"updates":[{"values":{},"as_node":"__input__"}]},` +
			`{"updates":[{"values":{"messages":[{"type":"human","content":"hi"}]},"as_node":"__start__"}]}]}`},
		{"search_metadata", "POST", base + "/search", `{"metadata":{"owner":"user-7"},"limit":10,"sort_by":"created_at","sort_order":"desc"}`},
		{"search_default", "POST", base + "/search", `{"limit":10}`},
		{"count", "POST", base + "/count", `{}`},
	} {
		b.Run(w.name, func(b *testing.B) {
			call(b, d.h, w.method, w.path, w.body, 200, nil) // warm the caches
			before := dyn.Capacity()
			n := 0
			for b.Loop() {
				call(b, d.h, w.method, w.path, w.body, 200, nil)
				n++
			}
			u := dyn.Capacity().Sub(before)
			per := func(v float64) float64 { return v / float64(n) }
			b.ReportMetric(per(u.ReadUnits), "RCU/op")
			b.ReportMetric(per(u.WriteUnits), "WCU/op")
			b.ReportMetric(per(float64(u.Calls())), "calls/op")
			b.ReportMetric(per(float64(u.GetItem)), "GetItem/op")
			b.ReportMetric(per(float64(u.Query)), "Query/op")
			b.ReportMetric(per(float64(u.TransactWriteItems)), "Tx/op")
		})
	}
}

// BenchmarkThreadGetStack is BenchmarkThreadGet without the test's own
// costs (a new request and recorder per call): one request is reused
// (the stack copies it before changing it) and the answer is discarded,
// so the figure is the handler stack alone. It logs errors only, as
// bench-peer's server does.
func BenchmarkThreadGetStack(b *testing.B) {
	d := deployOn(b, nil, "error")
	req := httptest.NewRequest("GET", "/deployments/"+d.dep+"/threads/"+d.thread, nil)
	req.Header.Set("X-Api-Key", adminKey)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			w.code = 0
			d.h.ServeHTTP(w, req)
			if w.code != 200 {
				b.Errorf("%d", w.code)
				return
			}
		}
	})
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	return len(p), nil
}
func (w *discardWriter) WriteHeader(code int) { w.code = code }

package deployments_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"
)

func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// GET /v2/deployments/{id} through the app's HTTP handler (auth, store
// read, JSON), without the network; reports the p50 of the calls.
func BenchmarkGetDeployment(b *testing.B) {
	e := start(b, "")
	d := e.must(201, "POST", "/v2/deployments", imageBody("bench"))
	h := e.app.Handler()
	req := httptest.NewRequest("GET", "/v2/deployments/"+str(d, "id"), nil)
	req.Header.Set("X-Api-Key", adminKey)
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		times = append(times, time.Since(t0))
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(p50(times).Nanoseconds()), "p50-ns")
}

// The same over a loopback TCP connection (httptest server, keep-alive).
func BenchmarkGetDeploymentHTTP(b *testing.B) {
	e := start(b, "")
	d := e.must(201, "POST", "/v2/deployments", imageBody("bench"))
	req, _ := http.NewRequest("GET", e.srv.URL+"/v2/deployments/"+str(d, "id"), nil)
	req.Header.Set("X-Api-Key", adminKey)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var buf [4096]byte
		for {
			if _, err := res.Body.Read(buf[:]); err != nil {
				break
			}
		}
		res.Body.Close()
		times = append(times, time.Since(t0))
		if res.StatusCode != 200 {
			b.Fatal(res.StatusCode)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(p50(times).Nanoseconds()), "p50-ns")
}

// POST /v2/deployments of a small repository until its revision is
// DEPLOYED (local mode: in-process queue and runner, go-git, bbolt),
// polling every millisecond; reports the p50 in milliseconds.
func BenchmarkPostToDeployed(b *testing.B) {
	e := start(b, "")
	repo := agentRepo(b)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		d := e.must(201, "POST", "/v2/deployments", repoHostBody(fmt.Sprintf("bench-%d", i), repo.Dir))
		id, rev := str(d, "id"), str(d, "latest_revision_id")
		for {
			r := e.revision(id, rev)
			if r["status"] == "DEPLOYED" {
				break
			}
			if terminal(str(r, "status")) {
				b.Fatalf("ended %v", r["status"])
			}
			time.Sleep(time.Millisecond)
		}
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(p50(times).Microseconds())/1000, "p50-ms")
}

// Package ratelimits enforces the hosted platform's rate-limit table (the
// interface's "Limits" section): the table as data, the choice of the row
// that applies to a request, the client identity from the trusted proxy
// chain, two limiters (exact in memory, and shared by every Lambda of a
// region over the store port), the HTTP middleware that answers 429, and the
// plan of the network edge (WAF rate-based rules and API Gateway method
// throttles) generated from the same rows. docs/rate-limits.md is generated
// from here too, so none of them can drift from the table.
package ratelimits

import (
	"fmt"
	"strings"
	"time"
)

// Region names a hosted region; the table has a column for each.
type Region string

const (
	US Region = "us"
	EU Region = "eu"
)

// Regions lists the hosted regions in the table's column order.
var Regions = []Region{US, EU}

// ParseRegion accepts "us" or "eu" (any case).
func ParseRegion(s string) (Region, error) {
	switch r := Region(strings.ToLower(strings.TrimSpace(s))); r {
	case US, EU:
		return r, nil
	}
	return "", fmt.Errorf("ratelimits: unknown region %q (want us or eu)", s)
}

// Identity is what a row counts requests by.
type Identity uint8

const (
	// ByIP counts by client address (IPv6 by its /64).
	ByIP Identity = iota + 1
	// ByAPIKey counts by the API key (a hash of it, never the key).
	ByAPIKey
	// ByUserIP counts by the x-user-id header together with the client
	// address.
	ByUserIP
)

func (id Identity) String() string {
	switch id {
	case ByIP:
		return "IP"
	case ByAPIKey:
		return "x-api-key"
	case ByUserIP:
		return "x-user-id + IP"
	}
	return "unknown"
}

// PathMatch says how a Match compares its Path with a request path.
type PathMatch uint8

const (
	// AnyPath: every path (a method-only match such as OPTIONS).
	AnyPath PathMatch = iota
	// Exact: the path equals Path.
	Exact
	// Template: Path has {uuid} segments, each matching one segment
	// shaped like a UUID; the other segments are equal.
	Template
	// Prefix: the path is Path or lies below it ("/repos", "/repos/a/b";
	// not "/repository").
	Prefix
	// Contains: Path occurs anywhere in the path.
	Contains
	// Suffix: the path ends with Path (the seed's "*/trigger").
	Suffix
)

func (m PathMatch) String() string {
	return [...]string{"any path", "exact", "template", "prefix", "contains", "suffix"}[m]
}

// Match is one alternative of a row's match: a method ("" for any) and a
// path test.
type Match struct {
	Method string
	Kind   PathMatch
	Path   string
}

// Rate is a count of requests per interval.
type Rate struct {
	Count    int64
	Interval time.Duration
}

func (r Rate) String() string { return fmt.Sprintf("%d / %d", r.Count, int64(r.Interval/time.Second)) }

// RowKind separates the specific rows from the fallbacks.
type RowKind uint8

const (
	// Specific rows name methods or paths.
	Specific RowKind = iota
	// Default rows catch every request carrying their identity's header
	// that no specific row took.
	Default
	// CatchAll takes everything else, by IP.
	CatchAll
)

// Row is one row of the interface's rate-limit table.
type Row struct {
	// Seq is the row's position in the seed's table (1-based). It names
	// the row in store keys, WAF rules and the docs.
	Seq int
	// SeedMatch is the seed's Match cell, verbatim.
	SeedMatch string
	// Matches are the alternatives of a Specific row (any one suffices).
	Matches  []Match
	Kind     RowKind
	Identity Identity
	// US and EU are the figures of each region's column.
	US, EU   Rate
	Category string
}

// Rate returns the row's figures in region r.
func (row Row) Rate(r Region) Rate {
	if r == EU {
		return row.EU
	}
	return row.US
}

// Name is a short stable name: "r12-run-query-api".
func (row Row) Name() string {
	var b strings.Builder
	fmt.Fprintf(&b, "r%02d-", row.Seq)
	dash := false
	for _, c := range strings.ToLower(row.Category) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// Mount is the second prefix the API is served under: the seed names
// "/runs/{uuid} or /api/v1/runs/{uuid}", and every route group with
// Mounts serves the same operation under it. A row's exact, template and
// prefix alternatives therefore also match below Mount; contains and suffix
// alternatives match anywhere already.
const Mount = "/api/v1"

func per(n int64, seconds int64) Rate {
	return Rate{Count: n, Interval: time.Duration(seconds) * time.Second}
}

func all(path string, kind PathMatch) Match { return Match{Kind: kind, Path: path} }

func on(method, path string, kind PathMatch) Match {
	return Match{Method: method, Kind: kind, Path: path}
}

// rows is the table, in the seed's order. How each Match cell reads:
//   - a bare path ("/repos", "/commits", "/generate", "/auth",
//     "/v1/beacon", "/public/download") names a resource tree: Prefix;
//   - "METHOD /path" names one operation: Exact, except "DELETE /sessions",
//     whose purpose ("session deletion") is DELETE /sessions and
//     DELETE /sessions/{id}: Prefix;
//   - "/info" and "/runs/stats" are single endpoints: Exact;
//   - "containing X" is Contains, "*/X" is Suffix, {uuid} is Template;
//   - in "DELETE /sessions or */trigger" the method belongs to the first
//     alternative only (workflow triggers are not DELETEs); in
//     "GET /runs/{uuid} or /api/v1/runs/{uuid}" it belongs to both (the
//     second is the same lookup under Mount).
var rows = []Row{
	{Seq: 1, SeedMatch: "OPTIONS, `/info`, `*/v1/metadata/submit`", Identity: ByIP, US: per(2000, 10), EU: per(2000, 10), Category: "High throughput",
		Matches: []Match{on("OPTIONS", "", AnyPath), all("/info", Exact), all("/v1/metadata/submit", Suffix)}},
	{Seq: 2, SeedMatch: "`/auth`", Identity: ByAPIKey, US: per(2000, 10), EU: per(2000, 10), Category: "High throughput",
		Matches: []Match{all("/auth", Prefix)}},
	{Seq: 3, SeedMatch: "`/auth`", Identity: ByUserIP, US: per(2000, 10), EU: per(2000, 10), Category: "High throughput",
		Matches: []Match{all("/auth", Prefix)}},
	{Seq: 4, SeedMatch: "`/v1/beacon`", Identity: ByIP, US: per(2000, 10), EU: per(2000, 10), Category: "High throughput",
		Matches: []Match{all("/v1/beacon", Prefix)}},
	{Seq: 5, SeedMatch: "`/repos`", Identity: ByAPIKey, US: per(100, 60), EU: per(100, 60), Category: "Repository",
		Matches: []Match{all("/repos", Prefix)}},
	{Seq: 6, SeedMatch: "`/repos`", Identity: ByUserIP, US: per(100, 60), EU: per(100, 60), Category: "Repository",
		Matches: []Match{all("/repos", Prefix)}},
	{Seq: 7, SeedMatch: "`POST /runs/batch`", Identity: ByAPIKey, US: per(2000, 10), EU: per(2000, 10), Category: "High throughput",
		Matches: []Match{on("POST", "/runs/batch", Exact)}},
	{Seq: 8, SeedMatch: "`POST /otel/v1/traces`", Identity: ByAPIKey, US: per(2000, 10), EU: per(2000, 10), Category: "Run ingest",
		Matches: []Match{on("POST", "/otel/v1/traces", Exact)}},
	{Seq: 9, SeedMatch: "`POST` containing `/charts`", Identity: ByAPIKey, US: per(750, 600), EU: per(750, 600), Category: "Charts",
		Matches: []Match{on("POST", "/charts", Contains)}},
	{Seq: 10, SeedMatch: "`POST` containing `/charts`", Identity: ByUserIP, US: per(750, 600), EU: per(750, 600), Category: "Charts",
		Matches: []Match{on("POST", "/charts", Contains)}},
	{Seq: 11, SeedMatch: "`POST /runs/multipart`", Identity: ByAPIKey, US: per(6000, 10), EU: per(6000, 10), Category: "Multipart ingest",
		Matches: []Match{on("POST", "/runs/multipart", Exact)}},
	{Seq: 12, SeedMatch: "`POST /runs/query`", Identity: ByAPIKey, US: per(15, 10), EU: per(15, 10), Category: "Run query (API)",
		Matches: []Match{on("POST", "/runs/query", Exact)}},
	{Seq: 13, SeedMatch: "`POST /runs/query`", Identity: ByUserIP, US: per(300, 10), EU: per(300, 10), Category: "Run query (User)",
		Matches: []Match{on("POST", "/runs/query", Exact)}},
	{Seq: 14, SeedMatch: "`/generate`", Identity: ByAPIKey, US: per(30, 3600), EU: per(30, 3600), Category: "Generation",
		Matches: []Match{all("/generate", Prefix)}},
	{Seq: 15, SeedMatch: "`/generate`", Identity: ByUserIP, US: per(30, 3600), EU: per(30, 3600), Category: "Generation",
		Matches: []Match{all("/generate", Prefix)}},
	{Seq: 16, SeedMatch: "`/commits`", Identity: ByAPIKey, US: per(10000, 60), EU: per(2000, 60), Category: "Commits",
		Matches: []Match{all("/commits", Prefix)}},
	{Seq: 17, SeedMatch: "`/commits`", Identity: ByUserIP, US: per(10000, 60), EU: per(2000, 60), Category: "Commits",
		Matches: []Match{all("/commits", Prefix)}},
	{Seq: 18, SeedMatch: "`DELETE /sessions` or `*/trigger`", Identity: ByAPIKey, US: per(10, 60), EU: per(10, 60), Category: "Deletion",
		Matches: []Match{on("DELETE", "/sessions", Prefix), all("/trigger", Suffix)}},
	{Seq: 19, SeedMatch: "`DELETE /sessions` or `*/trigger`", Identity: ByUserIP, US: per(30, 60), EU: per(30, 60), Category: "Deletion",
		Matches: []Match{on("DELETE", "/sessions", Prefix), all("/trigger", Suffix)}},
	{Seq: 20, SeedMatch: "`POST /runs` (single run ingest)", Identity: ByAPIKey, US: per(2000, 10), EU: per(2000, 10), Category: "Run ingest",
		Matches: []Match{on("POST", "/runs", Exact)}},
	{Seq: 21, SeedMatch: "`PATCH` containing `/runs`", Identity: ByAPIKey, US: per(2000, 10), EU: per(2000, 10), Category: "Run ingest",
		Matches: []Match{on("PATCH", "/runs", Contains)}},
	{Seq: 22, SeedMatch: "`POST /feedback`", Identity: ByAPIKey, US: per(2000, 10), EU: per(2000, 10), Category: "High throughput",
		Matches: []Match{on("POST", "/feedback", Exact)}},
	{Seq: 23, SeedMatch: "`GET /runs/{uuid}` or `/api/v1/runs/{uuid}`", Identity: ByAPIKey, US: per(30, 60), EU: per(30, 60), Category: "Run lookup",
		Matches: []Match{on("GET", "/runs/{uuid}", Template), on("GET", "/api/v1/runs/{uuid}", Template)}},
	{Seq: 24, SeedMatch: "`GET` containing `/examples`", Identity: ByAPIKey, US: per(5000, 60), EU: per(5000, 60), Category: "Examples",
		Matches: []Match{on("GET", "/examples", Contains)}},
	{Seq: 25, SeedMatch: "Any request with `x-api-key`", Kind: Default, Identity: ByAPIKey, US: per(1000, 10), EU: per(1000, 10), Category: "Default (API key)"},
	{Seq: 26, SeedMatch: "Any request with `x-user-id`", Kind: Default, Identity: ByUserIP, US: per(1000, 10), EU: per(1000, 10), Category: "Default (User)"},
	{Seq: 27, SeedMatch: "`/public/download`", Identity: ByIP, US: per(5000, 60), EU: per(5000, 60), Category: "Public download",
		Matches: []Match{all("/public/download", Prefix)}},
	{Seq: 28, SeedMatch: "`/runs/stats`", Identity: ByAPIKey, US: per(1, 10), EU: per(20, 10), Category: "Stats",
		Matches: []Match{all("/runs/stats", Exact)}},
	{Seq: 29, SeedMatch: "All other IPs (catch-all)", Kind: CatchAll, Identity: ByIP, US: per(100, 60), EU: per(100, 60), Category: "Public (catch-all)"},
}

// Rows returns a copy of the table, in the seed's order.
func Rows() []Row {
	out := make([]Row, len(rows))
	for i := range rows {
		out[i] = rowAt(i)
	}
	return out
}

// rowAt copies rows[i], so callers cannot change the table.
func rowAt(i int) Row {
	r := rows[i]
	r.Matches = append([]Match(nil), r.Matches...)
	return r
}

// RowBySeq returns the row at position seq (1-based) of the seed's table.
func RowBySeq(seq int) (Row, bool) {
	if seq < 1 || seq > len(rows) {
		return Row{}, false
	}
	return rowAt(seq - 1), true
}

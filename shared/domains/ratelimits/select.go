package ratelimits

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Presence says which identity headers a request carries.
type Presence struct {
	// Key: an API key (X-Api-Key, or Authorization: Bearer).
	Key bool
	// User: a non-empty X-User-Id header.
	User bool
}

// carries reports whether a request with p can be counted by identity id.
// Every request has a client address, so IP rows apply to all of them.
func (p Presence) carries(id Identity) bool {
	switch id {
	case ByAPIKey:
		return p.Key
	case ByUserIP:
		return p.User
	}
	return true
}

// candidate is one alternative of a specific row, in selection order.
type candidate struct {
	row   int // index in rows
	alt   int
	match Match
}

// pathRank orders the path tests from the most specific.
func pathRank(k PathMatch) int {
	switch k {
	case Exact:
		return 5
	case Template:
		return 4
	case Prefix:
		return 3
	case Contains, Suffix:
		return 2
	}
	return 1
}

var (
	// order holds every alternative of every specific row, most specific
	// first; the first one that applies to a request is its row.
	order                           = buildOrder()
	defaultKey, defaultUser, catchA = fallbacks()
	// byMethod is order filtered for each method the table names; other
	// methods use anyMethod. (A lookup instead of testing every entry.)
	byMethod, anyMethod = splitByMethod(order)
)

func splitByMethod(all []candidate) (map[string][]candidate, []candidate) {
	by := map[string][]candidate{}
	var anyM []candidate
	for _, c := range all {
		if c.match.Method == "" {
			anyM = append(anyM, c)
		} else {
			by[c.match.Method] = nil
		}
	}
	for m := range by {
		for _, c := range all {
			if c.match.Method == "" || c.match.Method == m {
				by[m] = append(by[m], c)
			}
		}
	}
	return by, anyM
}

func buildOrder() []candidate {
	var out []candidate
	for i, r := range rows {
		if r.Kind != Specific {
			continue
		}
		for j, m := range r.Matches {
			out = append(out, candidate{row: i, alt: j, match: m})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return before(out[a], out[b]) })
	return out
}

// before is the specificity order: path test (exact, template, prefix,
// contains and suffix, any path), then a named method before any method,
// then the seed's row order, then the alternative's position in its row.
func before(a, b candidate) bool {
	if ra, rb := pathRank(a.match.Kind), pathRank(b.match.Kind); ra != rb {
		return ra > rb
	}
	if ma, mb := a.match.Method != "", b.match.Method != ""; ma != mb {
		return ma
	}
	if a.row != b.row {
		return a.row < b.row
	}
	return a.alt < b.alt
}

func fallbacks() (key, user, all int) {
	key, user, all = -1, -1, -1
	for i, r := range rows {
		switch {
		case r.Kind == Default && r.Identity == ByAPIKey:
			key = i
		case r.Kind == Default && r.Identity == ByUserIP:
			user = i
		case r.Kind == CatchAll:
			all = i
		}
	}
	if key < 0 || user < 0 || all < 0 {
		panic("ratelimits: the table lacks a default or catch-all row")
	}
	return key, user, all
}

// selectRow returns the index in rows of the row that counts a request:
// the first candidate (most specific) whose identity the request carries
// and whose method and path match; else Default (API key) for a request
// with a key, Default (User) for one with x-user-id, else the catch-all.
// static compares route patterns ({param} segments) instead of paths.
func selectRow(method, path string, p Presence, static bool) int {
	if method == "HEAD" {
		// net/http serves HEAD with the GET handler: count it as one.
		method = "GET"
	}
	cands, ok := byMethod[method]
	if !ok {
		cands = anyMethod
	}
	// The path below Mount, for exact, template and prefix tests.
	below := ""
	if len(path) > len(Mount) && path[len(Mount)] == '/' && strings.HasPrefix(path, Mount) {
		below = path[len(Mount):]
	}
	for i := range cands {
		c := &cands[i]
		if p.carries(rows[c.row].Identity) && matchPaths(c.match, path, below, static) {
			return c.row
		}
	}
	switch {
	case p.Key:
		return defaultKey
	case p.User:
		return defaultUser
	}
	return catchA
}

// Select returns the row that counts a request with this method, path and
// identity headers.
func Select(method, path string, p Presence) Row {
	return rowAt(selectRow(method, path, p, false))
}

// Category is the rate-limit category a route falls under for a caller
// with an API key: method and a ServeMux path pattern whose {param}
// segments stand for any value a template row accepts ("/runs/{run_id}"
// is Run lookup). It is "" for the Default (API key) row, as api.Spec.Limit
// declares it, so the composition can check every route's Limit.
func Category(method, path string) string {
	i := selectRow(method, path, Presence{Key: true}, true)
	if i == defaultKey {
		return ""
	}
	return rows[i].Category
}

// CheckLimits compares each route's declared Limit with the table's
// Category for it, and returns every disagreement (nil when none): the
// composition runs it over every route group it serves.
func CheckLimits(specs ...api.Spec) error {
	var errs []error
	for _, s := range specs {
		if want := Category(s.Method, s.Path); s.Limit != want {
			errs = append(errs, fmt.Errorf("ratelimits: %s (group %s) declares Limit %q; the table says %q", s.Pattern(), s.Group, s.Limit, want))
		}
	}
	return errors.Join(errs...)
}

// matchPaths tests one alternative against a request path (or, static, a
// route pattern). Exact, template and prefix tests also match the path
// below Mount (below, "" when the path is not under Mount).
func matchPaths(m Match, path, below string, static bool) bool {
	switch m.Kind {
	case AnyPath:
		return true
	case Contains:
		return strings.Contains(path, m.Path)
	case Suffix:
		return strings.HasSuffix(path, m.Path)
	}
	return rooted(m, path, static) || below != "" && rooted(m, below, static)
}

func rooted(m Match, path string, static bool) bool {
	switch m.Kind {
	case Exact:
		return path == m.Path
	case Prefix:
		return strings.HasPrefix(path, m.Path) && (len(path) == len(m.Path) || path[len(m.Path)] == '/')
	case Template:
		return matchTemplate(m.Path, path, static)
	}
	return false
}

// matchTemplate compares segment by segment without allocating. A {uuid}
// segment matches a UUID-shaped segment, or (static) a {param} segment of
// a route pattern.
func matchTemplate(tmpl, path string, static bool) bool {
	for {
		ts, trest, tmore := cut(tmpl)
		ps, prest, pmore := cut(path)
		if isParam(ts) {
			if !(web.IsUUID(ps) || static && isParam(ps)) {
				return false
			}
		} else if ts != ps {
			return false
		}
		if tmore != pmore {
			return false
		}
		if !tmore {
			return true
		}
		tmpl, path = trest, prest
	}
}

// cut splits "/a/b" into "a" and "/b".
func cut(p string) (seg, rest string, more bool) {
	p = strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:], true
	}
	return p, "", false
}

func isParam(s string) bool { return len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' }

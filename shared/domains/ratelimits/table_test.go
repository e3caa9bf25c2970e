package ratelimits_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

const seedPath = "/work/shared/seed/000_2a8906ee058ca2b9.txt"

type seedRow struct {
	match, identity, us, eu, category string
}

// seedTable parses the seed's "Rate limits (hosted platform)" table.
func seedTable(t *testing.T) []seedRow {
	t.Helper()
	f, err := os.Open(seedPath)
	if os.IsNotExist(err) {
		t.Skipf("%s is not on this machine", seedPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []seedRow
	in, header := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "### ") {
			in = line == "### Rate limits (hosted platform)"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		if header < 2 { // the header row and the |---| row
			header++
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("seed row with %d cells: %s", len(cells), line)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		out = append(out, seedRow{cells[0], cells[1], cells[2], cells[3], cells[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("the seed has no rate-limit table")
	}
	return out
}

func parseFigure(t *testing.T, s string) ratelimits.Rate {
	t.Helper()
	count, iv, ok := strings.Cut(s, "/")
	c, err1 := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
	i, err2 := strconv.ParseInt(strings.TrimSpace(iv), 10, 64)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("figure %q", s)
	}
	return ratelimits.Rate{Count: c, Interval: time.Duration(i) * time.Second}
}

// TestTableMatchesSeed fails when the seed's table and ours drift: every
// seed row is present, in order, with its match text, identity, figures
// for both regions and category.
func TestTableMatchesSeed(t *testing.T) {
	seed := seedTable(t)
	rows := ratelimits.Rows()
	if len(seed) != len(rows) {
		t.Fatalf("seed has %d rows, the table %d", len(seed), len(rows))
	}
	identities := map[string]ratelimits.Identity{
		"IP": ratelimits.ByIP, "`x-api-key`": ratelimits.ByAPIKey, "`x-user-id` + IP": ratelimits.ByUserIP,
	}
	for i, s := range seed {
		r := rows[i]
		if r.Seq != i+1 {
			t.Errorf("row %d has Seq %d", i+1, r.Seq)
		}
		if r.SeedMatch != s.match {
			t.Errorf("row %d: match %q, seed %q", r.Seq, r.SeedMatch, s.match)
		}
		if id, ok := identities[s.identity]; !ok || id != r.Identity {
			t.Errorf("row %d: identity %v, seed %q", r.Seq, r.Identity, s.identity)
		}
		if us := parseFigure(t, s.us); us != r.US {
			t.Errorf("row %d: US %v, seed %v", r.Seq, r.US, us)
		}
		if eu := parseFigure(t, s.eu); eu != r.EU {
			t.Errorf("row %d: EU %v, seed %v", r.Seq, r.EU, eu)
		}
		if r.Category != s.category {
			t.Errorf("row %d: category %q, seed %q", r.Seq, r.Category, s.category)
		}
	}
}

// TestTableShape checks what the seed's prose says of the rows.
func TestTableShape(t *testing.T) {
	names := map[string]bool{}
	for _, r := range ratelimits.Rows() {
		if names[r.Name()] {
			t.Errorf("duplicate rule name %s", r.Name())
		}
		names[r.Name()] = true
		switch r.Kind {
		case ratelimits.Specific:
			if len(r.Matches) == 0 {
				t.Errorf("row %d has no match", r.Seq)
			}
		default:
			if len(r.Matches) != 0 {
				t.Errorf("fallback row %d has matches", r.Seq)
			}
		}
		// The rows naming a method in the seed's match have it.
		for _, m := range []string{"OPTIONS", "POST", "PATCH", "GET", "DELETE"} {
			if strings.Contains(r.SeedMatch, m) {
				found := false
				for _, x := range r.Matches {
					found = found || x.Method == m
				}
				if !found {
					t.Errorf("row %d: the seed names %s, the row does not", r.Seq, m)
				}
			}
		}
	}
	// Figures are the same in both regions except Commits and Stats.
	for _, r := range ratelimits.Rows() {
		differ := r.Category == "Commits" || r.Category == "Stats"
		if (r.US != r.EU) != differ {
			t.Errorf("row %d: US %v EU %v", r.Seq, r.US, r.EU)
		}
	}
	if r, _ := ratelimits.RowBySeq(16); r.Rate(ratelimits.EU) != (ratelimits.Rate{Count: 2000, Interval: time.Minute}) {
		t.Errorf("EU commits: %v", r.Rate(ratelimits.EU))
	}
	if r, _ := ratelimits.RowBySeq(28); r.Rate(ratelimits.EU) != (ratelimits.Rate{Count: 20, Interval: 10 * time.Second}) {
		t.Errorf("EU stats: %v", r.Rate(ratelimits.EU))
	}
	if _, ok := ratelimits.RowBySeq(30); ok {
		t.Error("row 30 exists")
	}
}

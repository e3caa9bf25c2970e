// Package charpages cuts a list of JSON items into pages by character
// count, the pagination of the tool server's get_thread_history and of
// fetch_runs with a trace_id. It keeps no state: the same items and the
// same request always give the same page, and the pages of a result,
// concatenated, hold every item exactly once, in order.
//
// The rules:
//  1. The budget is min(max_chars_per_page, 30000) characters.
//  2. Preview: when preview_chars > 0, every string value (object values
//     and array elements, recursively; never keys) longer than
//     preview_chars characters becomes its first preview_chars characters
//     followed by "… (+K chars)", K being the number of characters cut.
//  3. An item's size is the length, in Unicode characters, of its compact
//     JSON encoding as the answer carries it. A page's size is the size of
//     its items as a JSON array: brackets, items and the commas between.
//  4. Items are packed greedily in order: an item that would take the page
//     past the budget starts a new page. A page of several items therefore
//     always fits; an item bigger than the budget sits alone on its page.
//  5. An item alone on its page and still over the budget is cut further:
//     every string longer than L characters is cut to L the same way (only
//     where that shortens it), with L the largest length that fits; the
//     page is then marked truncated. If even L = 0 does not fit (an item
//     whose keys and numbers alone exceed the budget), the item is still
//     returned, cut at L = 0, so no item is ever dropped.
//  6. No items means zero pages. A page number outside 1..total_pages gives
//     no items (not an error), with total_pages, so the caller can recover.
package charpages

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// Budget constants of the interface.
const (
	// DefaultMaxChars is the default max_chars_per_page.
	DefaultMaxChars = 25000
	// MaxChars caps max_chars_per_page.
	MaxChars = 30000
	// DefaultPreviewChars is the default preview_chars.
	DefaultPreviewChars = 150
)

// TruncatedMessage explains a page whose single item was cut to fit.
const TruncatedMessage = "Page exceeded character budget; content truncated."

// Page is one page of a result.
type Page struct {
	// Items are the page's items, compact JSON.
	Items []json.RawMessage
	// PageNumber is the requested page, echoed.
	PageNumber int
	// TotalPages is the number of pages of the whole result.
	TotalPages int
	// MaxChars is the budget applied (the request's, capped).
	MaxChars int
	// PreviewChars is the preview length applied.
	PreviewChars int
	// Truncated reports that the page's single item was cut beyond the
	// preview to fit the budget (rule 5).
	Truncated bool
}

// Cap applies the budget cap of rule 1.
func Cap(maxChars int) int { return min(maxChars, MaxChars) }

// Paginate returns page pageNumber (1-based) of items. Items are values as
// encoding/json decodes them (map[string]any, []any, string, json.Number or
// float64, bool, nil); they are not modified.
func Paginate(items []any, pageNumber, maxChars, previewChars int) (Page, error) {
	budget := Cap(maxChars)
	p := Page{PageNumber: pageNumber, MaxChars: budget, PreviewChars: previewChars, Items: []json.RawMessage{}}

	values := make([]any, len(items))
	encoded := make([][]byte, len(items))
	sizes := make([]int, len(items))
	for i, it := range items {
		v := it
		if previewChars > 0 {
			v = Preview(it, previewChars)
		}
		b, err := encode(v)
		if err != nil {
			return Page{}, err
		}
		values[i], encoded[i], sizes[i] = v, b, utf8.RuneCount(b)
	}

	// Rule 4: greedy packing; starts[k] is the first item of page k+1.
	var starts []int
	cur := 0 // size of the open page, 0 when it is empty
	for i, n := range sizes {
		switch {
		case cur == 0:
			starts = append(starts, i)
			cur = 2 + n
		case cur+1+n > budget:
			starts = append(starts, i)
			cur = 2 + n
		default:
			cur += 1 + n
		}
	}
	p.TotalPages = len(starts)
	if pageNumber < 1 || pageNumber > p.TotalPages {
		return p, nil
	}
	first := starts[pageNumber-1]
	end := len(items)
	if pageNumber < p.TotalPages {
		end = starts[pageNumber]
	}
	if end-first == 1 && 2+sizes[first] > budget {
		b, err := shrink(values[first], budget-2)
		if err != nil {
			return Page{}, err
		}
		p.Items = append(p.Items, b)
		p.Truncated = true
		return p, nil
	}
	for i := first; i < end; i++ {
		p.Items = append(p.Items, encoded[i])
	}
	return p, nil
}

// Size is the size of rule 3 of one value: the characters of its compact
// JSON encoding.
func Size(v any) (int, error) {
	b, err := encode(v)
	if err != nil {
		return 0, err
	}
	return utf8.RuneCount(b), nil
}

// Encode is compact JSON exactly as the MCP answer carries it:
// encoding/json's output (HTML-safe escaping, sorted keys), produced by
// segmentio/encoding, which writes the same bytes about twice as fast (the
// fuzz test holds it to that).
func Encode(v any) ([]byte, error) {
	return segjson.Marshal(v)
}

func encode(v any) ([]byte, error) { return Encode(v) }

// Preview applies rule 2 to v, returning a new value (v is not modified;
// values without long strings are returned as they are).
func Preview(v any, n int) any {
	if n <= 0 {
		return v
	}
	return walk(v, func(s string) (string, bool) { return previewString(s, n) })
}

// previewString cuts s to n characters with the marker, when s is longer.
func previewString(s string, n int) (string, bool) {
	if len(s) <= n { // bytes ≥ characters: short strings need no count
		return s, false
	}
	count := utf8.RuneCountInString(s)
	if count <= n {
		return s, false
	}
	return cutAt(s, n, count), true
}

// cutAt is s's first n characters and the marker for the count-n cut ones.
func cutAt(s string, n, count int) string {
	i, k := 0, 0
	for k < n {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		k++
	}
	var b bytes.Buffer
	b.Grow(i + 24)
	b.WriteString(s[:i])
	b.WriteString("… (+")
	b.WriteString(strconv.Itoa(count - n))
	b.WriteString(" chars)")
	return b.String()
}

// walk rebuilds v with f applied to every string value, sharing the parts
// f leaves unchanged.
func walk(v any, f func(string) (string, bool)) any {
	out, _ := walkChanged(v, f)
	return out
}

func walkChanged(v any, f func(string) (string, bool)) (any, bool) {
	switch t := v.(type) {
	case string:
		s, changed := f(t)
		return s, changed
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			ne, changed := walkChanged(e, f)
			if changed && out == nil {
				out = make(map[string]any, len(t))
				for k2, e2 := range t {
					out[k2] = e2
				}
			}
			if out != nil {
				out[k] = ne
			}
		}
		if out == nil {
			return t, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range t {
			ne, changed := walkChanged(e, f)
			if changed && out == nil {
				out = make([]any, len(t))
				copy(out, t)
			}
			if out != nil {
				out[i] = ne
			}
		}
		if out == nil {
			return t, false
		}
		return out, true
	}
	return v, false
}

// longest is the length in characters of v's longest string value.
func longest(v any) int {
	m := 0
	walk(v, func(s string) (string, bool) {
		if len(s) > m { // bytes bound characters from above
			if c := utf8.RuneCountInString(s); c > m {
				m = c
			}
		}
		return s, false
	})
	return m
}

// cutAll cuts every string of v longer than l characters to l, where the
// marker makes it shorter (rule 5).
func cutAll(v any, l int) any {
	return walk(v, func(s string) (string, bool) {
		count := utf8.RuneCountInString(s)
		if count <= l {
			return s, false
		}
		c := cutAt(s, l, count)
		if utf8.RuneCountInString(c) >= count {
			return s, false
		}
		return c, true
	})
}

// shrink returns the encoding of v cut at the largest string length whose
// encoding fits budget characters, or cut at 0 when none fits.
func shrink(v any, budget int) (json.RawMessage, error) {
	lo, hi := 0, longest(v)
	var best []byte
	for lo <= hi {
		mid := lo + (hi-lo)/2
		b, err := encode(cutAll(v, mid))
		if err != nil {
			return nil, err
		}
		if utf8.RuneCount(b) <= budget {
			best = b
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if best != nil {
		return best, nil
	}
	return encode(cutAll(v, 0))
}

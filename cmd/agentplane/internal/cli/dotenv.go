package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// parseDotenv reads NAME=VALUE lines (a dotenv file) in order.
//
// The format: blank lines and lines starting with # are skipped; an
// optional "export " prefix is allowed; the value runs to the end of the
// line with surrounding spaces trimmed, and a " #" starts a comment in an
// unquoted value; 'single quotes' keep the value exactly; "double quotes"
// understand \n, \r, \t, \" and \\ and may span lines. There is no
// variable expansion: a secret holding "$" stays exactly what was written
// (the reason this is not a dotenv library, most of which expand $VAR).
func parseDotenv(r io.Reader) ([][2]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out [][2]string
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("line %d: expected NAME=VALUE", n)
		}
		value = strings.TrimSpace(value)
		start := n
		switch {
		case strings.HasPrefix(value, "'"):
			end := strings.Index(value[1:], "'")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated single quote", n)
			}
			if rest := strings.TrimSpace(value[end+2:]); rest != "" && !strings.HasPrefix(rest, "#") {
				return nil, fmt.Errorf("line %d: text after the closing quote", n)
			}
			value = value[1 : end+1]
		case strings.HasPrefix(value, `"`):
			body := value[1:]
			for {
				v, rest, done, err := unquoteDouble(body)
				if err != nil {
					return nil, fmt.Errorf("line %d: %v", start, err)
				}
				if done {
					if rest = strings.TrimSpace(rest); rest != "" && !strings.HasPrefix(rest, "#") {
						return nil, fmt.Errorf("line %d: text after the closing quote", start)
					}
					value = v
					break
				}
				// The value continues on the next line.
				if !sc.Scan() {
					return nil, fmt.Errorf("line %d: unterminated double quote", start)
				}
				n++
				body += "\n" + strings.TrimSuffix(sc.Text(), "\r")
			}
		default:
			if i := strings.Index(value, " #"); i >= 0 {
				value = strings.TrimSpace(value[:i])
			}
		}
		out = append(out, [2]string{name, value})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// unquoteDouble reads a double-quoted value's body up to its closing quote:
// the value, what follows the quote, and whether the quote was found.
func unquoteDouble(s string) (value, rest string, done bool, err error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case '"':
			return b.String(), s[i+1:], true, nil
		case '\\':
			if i+1 >= len(s) {
				b.WriteByte('\\')
				continue
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				b.WriteByte('\\')
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(ch)
		}
	}
	return "", "", false, nil
}

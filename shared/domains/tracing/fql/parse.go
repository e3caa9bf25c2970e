package fql

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tString
	tNumber
	tLParen
	tRParen
	tLBrack
	tRBrack
	tComma
	tBad
)

// punctuation are the one-byte tokens.
var punctuation = map[byte]tokKind{'(': tLParen, ')': tRParen, '[': tLBrack, ']': tRBrack, ',': tComma}

type token struct {
	kind tokKind
	pos  int
	text string // identifier, decoded string, number text, or the bad input
	num  float64
	err  string // why a tBad token is bad
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of filter"
	case tIdent:
		return "identifier " + strconv.Quote(t.text)
	case tString:
		return "string " + strconv.Quote(t.text)
	case tNumber:
		return "number " + t.text
	case tLParen:
		return `"("`
	case tRParen:
		return `")"`
	case tLBrack:
		return `"["`
	case tRBrack:
		return `"]"`
	case tComma:
		return `","`
	}
	return "character " + strconv.Quote(t.text)
}

type lexer struct {
	src string
	pos int
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '.' }

func (l *lexer) next() token {
	for l.pos < len(l.src) && strings.IndexByte(" \t\r\n", l.src[l.pos]) >= 0 {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tEOF, pos: start}
	}
	c := l.src[l.pos]
	if k, ok := punctuation[c]; ok {
		l.pos++
		return token{kind: k, pos: start}
	}
	switch {
	case c == '"' || c == '\'':
		return l.str(c)
	case c == '-' || c == '+' || c >= '0' && c <= '9':
		return l.number()
	case isIdentStart(c):
		for l.pos < len(l.src) && isIdentPart(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tIdent, pos: start, text: l.src[start:l.pos]}
	}
	r, n := utf8.DecodeRuneInString(l.src[l.pos:])
	l.pos += n
	return token{kind: tBad, pos: start, text: string(r), err: "unexpected character " + strconv.QuoteRune(r)}
}

// str reads a quoted string with backslash escapes (\" \' \\ \/ \n \t \r
// \b \f \uXXXX).
func (l *lexer) str(quote byte) token {
	start := l.pos
	l.pos++
	var b strings.Builder
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == quote:
			l.pos++
			return token{kind: tString, pos: start, text: strings.ToValidUTF8(b.String(), "\uFFFD")}
		case c == '\\':
			if l.pos+1 >= len(l.src) {
				return token{kind: tBad, pos: l.pos, err: "unterminated escape sequence"}
			}
			e := l.src[l.pos+1]
			switch e {
			case '"', '\'', '\\', '/':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'u':
				if l.pos+6 > len(l.src) {
					return token{kind: tBad, pos: l.pos, err: `incomplete \u escape`}
				}
				n, err := strconv.ParseUint(l.src[l.pos+2:l.pos+6], 16, 32)
				if err != nil {
					return token{kind: tBad, pos: l.pos, err: `invalid \u escape`}
				}
				b.WriteRune(rune(n))
				l.pos += 4
			default:
				return token{kind: tBad, pos: l.pos, err: "invalid escape sequence \\" + string(rune(e))}
			}
			l.pos += 2
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
	return token{kind: tBad, pos: start, err: "unterminated string"}
}

func (l *lexer) number() token {
	start := l.pos
	if c := l.src[l.pos]; c == '-' || c == '+' {
		l.pos++
	}
	for l.pos < len(l.src) && strings.IndexByte("0123456789.eE+-", l.src[l.pos]) >= 0 {
		// A sign is part of the number only right after an exponent.
		if c := l.src[l.pos]; (c == '+' || c == '-') && !(l.src[l.pos-1] == 'e' || l.src[l.pos-1] == 'E') {
			break
		}
		l.pos++
	}
	text := l.src[start:l.pos]
	n, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return token{kind: tBad, pos: start, text: text, err: "invalid number " + strconv.Quote(text)}
	}
	return token{kind: tNumber, pos: start, text: text, num: n}
}

type parser struct {
	lex   lexer
	tok   token
	nodes int
}

func (p *parser) next() { p.tok = p.lex.next() }

func (p *parser) bad() *Error {
	if p.tok.kind == tBad {
		return errAt(p.tok.pos, "%s", p.tok.err)
	}
	return nil
}

func (p *parser) expect(k tokKind, what string) error {
	if e := p.bad(); e != nil {
		return e
	}
	if p.tok.kind != k {
		return errAt(p.tok.pos, "expected %s, found %s", what, p.tok.describe())
	}
	p.next()
	return nil
}

// expr parses an operator call: name(args).
func (p *parser) expr(depth int) (Expr, error) {
	if depth > MaxDepth {
		return nil, errAt(p.tok.pos, "the filter nests deeper than %d calls", MaxDepth)
	}
	if p.nodes++; p.nodes > MaxNodes {
		return nil, errAt(p.tok.pos, "the filter has more than %d terms", MaxNodes)
	}
	if e := p.bad(); e != nil {
		return nil, e
	}
	if p.tok.kind != tIdent {
		return nil, errAt(p.tok.pos, "expected an operator such as eq( or and(, found %s", p.tok.describe())
	}
	name, at := p.tok.text, p.tok.pos
	op, ok := ops[strings.ToLower(name)]
	if !ok {
		return nil, errAt(at, "unknown operator %q", name)
	}
	p.next()
	if err := p.expect(tLParen, `"(" after `+name); err != nil {
		return nil, err
	}
	switch op {
	case And, Or, Not:
		l := &Logical{Op: op, At: at}
		for {
			a, err := p.expr(depth + 1)
			if err != nil {
				return nil, err
			}
			l.Args = append(l.Args, a)
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
		if err := p.expect(tRParen, `"," or ")"`); err != nil {
			return nil, err
		}
		if op == Not && len(l.Args) != 1 {
			return nil, errAt(at, "not takes exactly one argument, found %d", len(l.Args))
		}
		return l, nil
	}
	c := &Cond{Op: op, At: at}
	// search("text") has no field; every other operator starts with one.
	if op == Search && (p.tok.kind == tString || p.tok.kind == tNumber) {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		c.Value = v
		return c, p.expect(tRParen, `")"`)
	}
	if e := p.bad(); e != nil {
		return nil, e
	}
	if p.tok.kind != tIdent {
		return nil, errAt(p.tok.pos, "expected a field name, found %s", p.tok.describe())
	}
	c.Field = strings.ToLower(p.tok.text)
	fieldAt := p.tok.pos
	if _, ok := Fields[c.Field]; !ok {
		return nil, errAt(fieldAt, "unknown field %q", p.tok.text)
	}
	p.next()
	if op == Exists {
		return c, p.expect(tRParen, `")"`)
	}
	if err := p.expect(tComma, `"," and a value after the field`); err != nil {
		return nil, err
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	c.Value = v
	return c, p.expect(tRParen, `")"`)
}

// value parses a literal: a string, a number, true, false, null, or a list
// of literals.
func (p *parser) value() (Value, error) {
	if e := p.bad(); e != nil {
		return Value{}, e
	}
	t := p.tok
	switch t.kind {
	case tString:
		p.next()
		return Value{Kind: VString, Str: t.text, At: t.pos}, nil
	case tNumber:
		p.next()
		return Value{Kind: VNumber, Num: t.num, Str: t.text, At: t.pos}, nil
	case tIdent:
		switch strings.ToLower(t.text) {
		case "null", "none":
			p.next()
			return Value{Kind: VNull, At: t.pos}, nil
		case "true":
			p.next()
			return Value{Kind: VBool, Bool: true, At: t.pos}, nil
		case "false":
			p.next()
			return Value{Kind: VBool, Bool: false, At: t.pos}, nil
		}
		return Value{}, errAt(t.pos, "expected a value (a quoted string, a number, true, false, null or a list), found %s", t.describe())
	case tLBrack:
		p.next()
		v := Value{Kind: VList, At: t.pos}
		if p.tok.kind == tRBrack {
			p.next()
			return v, nil
		}
		for {
			if p.nodes++; p.nodes > MaxNodes {
				return Value{}, errAt(p.tok.pos, "the filter has more than %d terms", MaxNodes)
			}
			x, err := p.value()
			if err != nil {
				return Value{}, err
			}
			if x.Kind == VList {
				return Value{}, errAt(x.At, "lists cannot be nested")
			}
			v.List = append(v.List, x)
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
		return v, p.expect(tRBrack, `"," or "]"`)
	}
	return Value{}, errAt(t.pos, "expected a value, found %s", t.describe())
}

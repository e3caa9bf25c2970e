package scim

import (
	"encoding/json"
	"strings"
)

// PatchOperation is one operation of a PATCH request (RFC 7644 §3.5.2).
type PatchOperation struct {
	Op    string
	Path  string
	Value any
}

// MaxPatchOperations bounds one PATCH request.
const MaxPatchOperations = 1000

// parsePatchBody reads {"schemas":[PatchOp], "Operations":[...]}.
func parsePatchBody(body map[string]any) ([]PatchOperation, error) {
	if err := checkSchemas(body, URNPatchOp); err != nil {
		return nil, err
	}
	var raw any
	for k, v := range body {
		if strings.EqualFold(k, "Operations") {
			raw = v
		}
	}
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, badRequest(InvalidSyntax, "Operations must be a non-empty array")
	}
	if len(list) > MaxPatchOperations {
		return nil, errorf(413, TooMany, "A PATCH request can hold at most %d operations", MaxPatchOperations)
	}
	ops := make([]PatchOperation, 0, len(list))
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, badRequest(InvalidSyntax, "Operations[%d] must be an object", i)
		}
		var op PatchOperation
		for k, v := range m {
			switch strings.ToLower(k) {
			case "op":
				s, _ := v.(string)
				op.Op = strings.ToLower(s)
			case "path":
				s, ok := v.(string)
				if !ok {
					return nil, badRequest(InvalidPath, "Operations[%d].path must be a string", i)
				}
				op.Path = strings.TrimSpace(s)
			case "value":
				op.Value = v
			}
		}
		if op.Op != "add" && op.Op != "remove" && op.Op != "replace" {
			return nil, badRequest(InvalidSyntax, "Operations[%d].op must be add, remove or replace", i)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// patchPath is a parsed PATCH path: attrPath ["[" valFilter "]"] ["." subAttr].
type patchPath struct {
	attr   *Attribute
	filter Expr
	sub    *Attribute
}

func parsePatchPath(rt *ResourceType, raw string) (patchPath, error) {
	if len(raw) > MaxFilterLength {
		return patchPath{}, badRequest(InvalidPath, "The path is longer than %d bytes", MaxFilterLength)
	}
	open := strings.IndexByte(raw, '[')
	if open < 0 {
		ref, err := resolveAttrPath(rt, raw)
		if err != nil {
			return patchPath{}, badRequest(InvalidPath, "Invalid path %q: %v", raw, err)
		}
		return patchPath{attr: ref.attr, sub: ref.sub}, nil
	}
	// Find the closing bracket outside quoted strings.
	closeAt, inString := -1, false
	for i := open + 1; i < len(raw); i++ {
		switch {
		case inString && raw[i] == '\\':
			i++
		case raw[i] == '"':
			inString = !inString
		case !inString && raw[i] == ']':
			closeAt = i
		}
		if closeAt >= 0 {
			break
		}
	}
	if closeAt < 0 {
		return patchPath{}, badRequest(InvalidPath, "Invalid path %q: missing ]", raw)
	}
	ref, err := resolveAttrPath(rt, raw[:open])
	if err != nil {
		return patchPath{}, badRequest(InvalidPath, "Invalid path %q: %v", raw, err)
	}
	if ref.sub != nil || ref.attr.Type != typeComplex || !ref.attr.MultiValued {
		return patchPath{}, badRequest(InvalidPath, "Invalid path %q: a value filter needs a multi-valued complex attribute", raw)
	}
	f, err := parseFilterWith(rt, raw[open+1:closeAt], ref.attr)
	if err != nil {
		if se, ok := err.(*Error); ok {
			se.ScimType = InvalidPath
		}
		return patchPath{}, err
	}
	p := patchPath{attr: ref.attr, filter: f}
	rest := raw[closeAt+1:]
	if rest != "" {
		if !strings.HasPrefix(rest, ".") || ref.attr.sub(rest[1:]) == nil {
			return patchPath{}, badRequest(InvalidPath, "Invalid path %q: unknown sub-attribute %q", raw, strings.TrimPrefix(rest, "."))
		}
		p.sub = ref.attr.sub(rest[1:])
	}
	return p, nil
}

// applyPatch applies ops in order to res, a normalized resource. Callers
// apply it to a copy and store the result only when every operation
// succeeded, so a failing request changes nothing.
func applyPatch(rt *ResourceType, res map[string]any, ops []PatchOperation) error {
	for _, op := range ops {
		if op.Path == "" {
			if op.Op == "remove" {
				return badRequest(NoTarget, "A remove operation needs a path")
			}
			obj, ok := op.Value.(map[string]any)
			if !ok {
				return badRequest(InvalidSyntax, "Without a path, the value of %s must be an object of attributes", op.Op)
			}
			// Each key is a path of its own ("name.givenName" and
			// extension URNs included); unknown and read-only attributes
			// are ignored, as in a PUT body.
			for _, k := range sortedKeys(obj) {
				if strings.EqualFold(k, "schemas") {
					continue
				}
				p, err := parsePatchPath(rt, k)
				if err != nil || p.attr.Mutability == readOnly {
					continue
				}
				if err := applyOp(res, op.Op, p, obj[k], k); err != nil {
					return err
				}
			}
			continue
		}
		p, err := parsePatchPath(rt, op.Path)
		if err != nil {
			return err
		}
		if p.attr.Mutability == readOnly || (p.sub != nil && p.sub.Mutability == readOnly) {
			return badRequest(Mutability, "%s is read-only", op.Path)
		}
		if err := applyOp(res, op.Op, p, op.Value, op.Path); err != nil {
			return err
		}
	}
	return nil
}

func applyOp(res map[string]any, op string, p patchPath, raw any, path string) error {
	a := p.attr
	// Normalize the value against its target.
	var v any
	var err error
	switch {
	case op == "remove":
		if raw != nil && a.MultiValued && p.filter == nil && p.sub == nil {
			v, err = normalize(a, path, raw, false)
		}
	case p.sub != nil:
		v, err = normalize(p.sub, path, raw, false)
	case p.filter != nil:
		v, err = normalize(a, path, raw, true)
	default:
		v, err = normalize(a, path, raw, false)
	}
	if err != nil {
		return err
	}
	if op != "remove" && v == nil {
		// Setting null unassigns (RFC 7644 §3.5.2.3 treats it like remove).
		op = "remove"
	}

	switch {
	case p.filter == nil && p.sub == nil:
		return applyWhole(res, op, a, v)
	case p.filter == nil:
		return applySub(res, op, a, p.sub, v)
	default:
		return applyFiltered(res, op, p, v, path)
	}
}

func listOf(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

func setList(res map[string]any, name string, list []any) {
	if len(list) == 0 {
		delete(res, name)
		return
	}
	res[name] = list
}

// sameElement reports whether two elements of a multi-valued attribute are
// the same value: by their "value" sub-attribute when both have one.
func sameElement(a *Attribute, x, y any) bool {
	mx, okx := x.(map[string]any)
	my, oky := y.(map[string]any)
	if okx && oky {
		vx, hx := mx["value"].(string)
		vy, hy := my["value"].(string)
		if hx && hy {
			if s := a.sub("value"); s != nil && !s.CaseExact {
				return strings.EqualFold(vx, vy)
			}
			return vx == vy
		}
	}
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(bx) == string(by)
}

func applyWhole(res map[string]any, op string, a *Attribute, v any) error {
	switch {
	case op == "remove" && a.MultiValued && v != nil:
		// remove with a value list: drop the matching elements (the form
		// Entra ID uses to remove group members).
		var keep []any
		for _, e := range listOf(res[a.Name]) {
			drop := false
			for _, x := range listOf(v) {
				if sameElement(a, e, x) {
					drop = true
				}
			}
			if !drop {
				keep = append(keep, e)
			}
		}
		setList(res, a.Name, keep)
	case op == "remove":
		delete(res, a.Name)
	case a.MultiValued:
		cur := listOf(res[a.Name])
		if op == "replace" {
			cur = nil
		}
		var touched []int
		for _, x := range listOf(v) {
			dup := -1
			for i, e := range cur {
				if sameElement(a, e, x) {
					dup = i
				}
			}
			if dup >= 0 {
				cur[dup] = mergeInto(cur[dup], x)
				touched = append(touched, dup)
				continue
			}
			cur = append(cur, x)
			touched = append(touched, len(cur)-1)
		}
		onePrimary(cur, touched)
		setList(res, a.Name, cur)
	case a.Type == typeComplex:
		// Sub-attributes not in the value are left as they are.
		res[a.Name] = mergeInto(res[a.Name], v)
	default:
		res[a.Name] = v
	}
	return nil
}

func mergeInto(dst, src any) any {
	s, ok := src.(map[string]any)
	if !ok {
		return src
	}
	d, _ := dst.(map[string]any)
	out := map[string]any{}
	for k, x := range d {
		out[k] = x
	}
	for k, x := range s {
		out[k] = x
	}
	return out
}

// onePrimary keeps "primary": true on at most one element: the last of
// the touched ones that sets it (RFC 7644 §3.5.2).
func onePrimary(list []any, touched []int) {
	winner := -1
	for _, i := range touched {
		if m, ok := list[i].(map[string]any); ok && m["primary"] == true {
			winner = i
		}
	}
	if winner < 0 {
		return
	}
	for i, e := range list {
		if m, ok := e.(map[string]any); ok && i != winner && m["primary"] == true {
			m2 := mergeInto(m, map[string]any{}).(map[string]any)
			m2["primary"] = false
			list[i] = m2
		}
	}
}

func applySub(res map[string]any, op string, a, sub *Attribute, v any) error {
	if a.MultiValued {
		list := listOf(res[a.Name])
		if len(list) == 0 && op != "remove" {
			list = []any{map[string]any{}}
		}
		var touched []int
		for i, e := range list {
			m := mergeInto(e, map[string]any{}).(map[string]any)
			if op == "remove" {
				delete(m, sub.Name)
			} else {
				m[sub.Name] = v
			}
			list[i] = m
			touched = append(touched, i)
		}
		onePrimary(list, touched)
		setList(res, a.Name, list)
		return nil
	}
	m := mergeInto(res[a.Name], map[string]any{}).(map[string]any)
	if op == "remove" {
		delete(m, sub.Name)
	} else {
		m[sub.Name] = v
	}
	if len(m) == 0 {
		delete(res, a.Name)
	} else {
		res[a.Name] = m
	}
	return nil
}

func applyFiltered(res map[string]any, op string, p patchPath, v any, path string) error {
	a := p.attr
	list := listOf(res[a.Name])
	var matched []int
	for i, e := range list {
		if m, ok := e.(map[string]any); ok && p.filter.Match(m) {
			matched = append(matched, i)
		}
	}
	if len(matched) == 0 {
		switch op {
		case "remove":
			return nil // already absent
		case "replace":
			return badRequest(NoTarget, "No value of %s matches the filter in %q", a.Name, path)
		}
		// add to a filter that matches nothing: create the element the
		// filter describes when it is a conjunction of eq comparisons
		// (emails[type eq "work"].value), as identity providers expect.
		elem, ok := elementFromFilter(p.filter)
		if !ok {
			return badRequest(NoTarget, "No value of %s matches the filter in %q", a.Name, path)
		}
		if p.sub != nil {
			elem[p.sub.Name] = v
		} else {
			elem = mergeInto(elem, v).(map[string]any)
		}
		list = append(list, elem)
		onePrimary(list, []int{len(list) - 1})
		setList(res, a.Name, list)
		return nil
	}
	var out []any
	var touched []int
	for i, e := range list {
		if !containsInt(matched, i) {
			out = append(out, e)
			continue
		}
		switch {
		case op == "remove" && p.sub == nil:
			continue
		case op == "remove":
			m := mergeInto(e, map[string]any{}).(map[string]any)
			delete(m, p.sub.Name)
			out = append(out, m)
		case p.sub != nil:
			m := mergeInto(e, map[string]any{}).(map[string]any)
			m[p.sub.Name] = v
			out = append(out, m)
			touched = append(touched, len(out)-1)
		case op == "replace":
			out = append(out, v)
			touched = append(touched, len(out)-1)
		default:
			out = append(out, mergeInto(e, v))
			touched = append(touched, len(out)-1)
		}
	}
	onePrimary(out, touched)
	setList(res, a.Name, out)
	return nil
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// elementFromFilter builds {sub: value} from a filter made only of
// "sub eq value" terms joined by and.
func elementFromFilter(e Expr) (map[string]any, bool) {
	switch x := e.(type) {
	case cmpExpr:
		if x.op != "eq" || x.val == nil || x.ref.sub != nil {
			return nil, false
		}
		return map[string]any{x.ref.attr.Name: x.val}, true
	case andExpr:
		l, ok1 := elementFromFilter(x.l)
		r, ok2 := elementFromFilter(x.r)
		if !ok1 || !ok2 {
			return nil, false
		}
		for k, v := range r {
			l[k] = v
		}
		return l, true
	}
	return nil, false
}

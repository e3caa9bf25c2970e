package threads

import (
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"net/http"
	"time"
)

// UpdateIn is one update of a superstep (ThreadSuperstepUpdate), or the
// body of POST /threads/{id}/state without its checkpoint fields.
type UpdateIn struct {
	Values  any        `json:"values"`
	Command *CommandIn `json:"command"`
	AsNode  *string    `json:"as_node"`
}

// CommandIn is a LangGraph Command.
type CommandIn struct {
	Update any `json:"update"`
	Resume any `json:"resume"`
	Goto   any `json:"goto"`
}

// SuperstepIn is one superstep of a thread creation.
type SuperstepIn struct {
	Updates []UpdateIn `json:"updates"`
}

// stepError is a failed superstep: 400 for LangGraph's InvalidUpdateError
// cases, 422 for a malformed value (with its location).
type stepError struct {
	status int
	loc    []any
	msg    string
}

func (e *stepError) Error() string { return e.msg }

func invalidUpdate(format string, args ...any) *stepError {
	return &stepError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func badValue(loc []any, msg string) *stepError {
	return &stepError{status: http.StatusUnprocessableEntity, loc: loc, msg: msg}
}

// toWeb renders a step error below the request location prefix.
func (e *stepError) toWeb(prefix ...any) error {
	if e.status == http.StatusBadRequest {
		return fault.Bad("%s", e.msg)
	}
	return fault.Invalid(append(append([]any{"body"}, prefix...), e.loc...), e.msg, "value_error")
}

// applySuperstep computes the checkpoint that follows prev (nil: the
// thread has none) when updates run as one superstep, the way LangGraph's
// bulk_update_state does:
//
//   - __input__ (alone): source "input", step -1 on an empty thread (else
//     prev+1); the values become the pending __start__ input, the state
//     values do not change, and __start__ is next.
//   - __end__ with null values (alone): clears the pending tasks.
//   - __copy__ (alone, null values): a fork, a sibling of prev.
//   - any other node, __start__ included: source "update", step prev+1
//     (0 on an empty thread); the values go through the reducers; the
//     updated nodes leave next, Command.goto nodes join it.
//
// The id, parent and timestamp are set by the caller.
func applySuperstep(prev *checkpoint, updates []UpdateIn, graphID string, newID func() string) (*checkpoint, error) {
	if len(updates) == 0 {
		return nil, badValue([]any{"updates"}, "List should have at least 1 item after validation, not 0")
	}
	prevStep, prevValues := -1, map[string]any{}
	if prev != nil {
		prevStep, prevValues = prev.Meta.Step, prev.Values
	}
	cp := &checkpoint{Values: prevValues, Meta: checkpointMD{GraphID: graphID, Parents: map[string]any{}, Writes: map[string]any{}}}
	if prev != nil {
		cp.Meta.Base = prev.ID
		if prev.Meta.Parents != nil {
			cp.Meta.Parents = prev.Meta.Parents
		}
	}
	first := updates[0]
	node := ""
	if first.AsNode != nil {
		node = *first.AsNode
	}
	switch {
	case node == nodeInput:
		if len(updates) > 1 {
			return nil, invalidUpdate("Cannot apply multiple updates when updating as input")
		}
		if first.Command != nil {
			return nil, badValue([]any{"updates", 0, "command"}, "An update as __input__ takes values, not a command")
		}
		if first.Values == nil {
			return nil, invalidUpdate("Received no input writes for __start__")
		}
		cp.Meta.Source = "input"
		cp.Meta.Step = -1
		if prev != nil {
			cp.Meta.Step = prevStep + 1
		}
		cp.Meta.Writes = map[string]any{nodeStart: first.Values}
		cp.Input, cp.HasInput = first.Values, true
		cp.Next = mergeNext(prevNext(prev), nil, []string{nodeStart})
		return cp, nil
	case node == nodeEnd && first.Values == nil && first.Command == nil:
		if len(updates) > 1 {
			return nil, invalidUpdate("Cannot apply multiple updates when clearing state")
		}
		cp.Meta.Source = "update"
		cp.Meta.Step = prevStep + 1
		return cp, nil
	case node == nodeCopy:
		if len(updates) > 1 {
			return nil, invalidUpdate("Cannot copy checkpoint with multiple updates")
		}
		if prev == nil {
			return nil, invalidUpdate("Cannot copy a non-existent checkpoint")
		}
		if first.Values != nil || first.Command != nil {
			return nil, badValue([]any{"updates", 0, "values"}, "An update as __copy__ takes no values")
		}
		cp.Meta.Source = "fork"
		cp.Meta.Step = prevStep + 1
		cp.Next, cp.Input, cp.HasInput = prev.Next, prev.Input, prev.HasInput
		return cp, nil
	}

	var writes []write
	var nodes, gotos []string
	for j, u := range updates {
		n := ""
		if u.AsNode != nil {
			n = *u.AsNode
		}
		if n == "" {
			if len(updates) > 1 {
				return nil, invalidUpdate("as_node is required when applying multiple updates")
			}
			var err error
			if n, err = inferNode(prev); err != nil {
				return nil, err
			}
		}
		switch n {
		case nodeInput, nodeCopy:
			return nil, invalidUpdate("%s can only be the single update of its superstep", n)
		}
		ws, err := updateWrites(u.Values, []any{"updates", j, "values"})
		if err != nil {
			return nil, err
		}
		var recorded any = u.Values
		if u.Command != nil {
			if u.Command.Resume != nil {
				return nil, invalidUpdate("Command.resume needs an interrupted task, and this thread has none")
			}
			cw, err := updateWrites(u.Command.Update, []any{"updates", j, "command", "update"})
			if err != nil {
				return nil, err
			}
			ws = append(ws, cw...)
			g, err := gotoNodes(u.Command.Goto, []any{"updates", j, "command", "goto"})
			if err != nil {
				return nil, err
			}
			gotos = append(gotos, g...)
			if u.Values == nil {
				recorded = u.Command.Update
			}
		}
		writes = append(writes, ws...)
		nodes = append(nodes, n)
		if old, dup := cp.Meta.Writes[n]; dup {
			if list, ok := old.([]any); ok {
				cp.Meta.Writes[n] = append(list, recorded)
			} else {
				cp.Meta.Writes[n] = []any{old, recorded}
			}
		} else {
			cp.Meta.Writes[n] = recorded
		}
	}
	values, err := applyStep(prevValues, writes, randomID)
	if err != nil {
		if ue, ok := err.(*updateError); ok {
			if ue.Status400 {
				return nil, invalidUpdate("%s", ue.Msg)
			}
			return nil, badValue(ue.Path, ue.Msg)
		}
		return nil, err
	}
	cp.Values = values
	cp.Meta.Source = "update"
	cp.Meta.Step = prevStep + 1
	cp.Next = mergeNext(prevNext(prev), nodes, gotos)
	consumed := false
	for _, n := range nodes {
		if n == nodeStart {
			consumed = true
		}
	}
	if prev != nil && prev.HasInput && !consumed {
		cp.Input, cp.HasInput = prev.Input, true
	}
	return cp, nil
}

func prevNext(prev *checkpoint) []string {
	if prev == nil {
		return nil
	}
	return prev.Next
}

// mergeNext keeps the pending nodes that did not just run, then adds new
// ones, without duplicates.
func mergeNext(pending, ran, add []string) []string {
	done := map[string]bool{}
	for _, n := range ran {
		done[n] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range append(append([]string{}, pending...), add...) {
		if done[n] && !contains(add, n) || seen[n] || n == nodeEnd {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// inferNode picks as_node when an update omits it, as LangGraph does: the
// input node on a thread where no node has run, else the single node that
// wrote last.
func inferNode(prev *checkpoint) (string, error) {
	if prev == nil || prev.Meta.Source == "input" {
		return nodeStart, nil
	}
	if len(prev.Meta.Writes) == 1 {
		for n := range prev.Meta.Writes {
			return n, nil
		}
	}
	return "", invalidUpdate("Ambiguous update, specify as_node")
}

// updateWrites turns an update's values (an object, a list of objects, or
// null) into writes.
func updateWrites(v any, loc []any) ([]write, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return []write{{Values: t, Loc: loc}}, nil
	case []any:
		out := make([]write, 0, len(t))
		for i, x := range t {
			l := append(append([]any{}, loc...), i)
			m, ok := x.(map[string]any)
			if !ok {
				return nil, badValue(l, "Input should be a valid dictionary")
			}
			out = append(out, write{Values: m, Loc: l})
		}
		return out, nil
	default:
		return nil, badValue(loc, "Input should be a valid dictionary or a list of dictionaries")
	}
}

// gotoNodes reads Command.goto: a node name, a Send ({node, input}), or a
// list of those.
func gotoNodes(v any, loc []any) ([]string, error) {
	one := func(x any, l []any) (string, error) {
		switch t := x.(type) {
		case string:
			if t == "" {
				return "", badValue(l, "A goto node name must not be empty")
			}
			return t, nil
		case map[string]any:
			if n, ok := t["node"].(string); ok && n != "" {
				return n, nil
			}
		}
		return "", badValue(l, "goto takes a node name, a Send object {node, input}, or a list of them")
	}
	switch t := v.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]string, 0, len(t))
		for i, x := range t {
			n, err := one(x, append(loc, i))
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	default:
		n, err := one(t, loc)
		if err != nil {
			return nil, err
		}
		return []string{n}, nil
	}
}

// statusOf derives a thread's status from its latest checkpoint (runs,
// which this API does not execute, would add busy and error).
func statusOf(cp *checkpoint) string {
	if cp != nil && len(cp.Next) > 0 {
		return StatusInterrupted
	}
	return StatusIdle
}

// snapshotMetadata is the metadata a snapshot shows: LangGraph's
// checkpoint metadata with the reading thread's id (copies share
// checkpoints, so the id is written at read time).
func snapshotMetadata(t *threadRecord, cp *checkpoint) map[string]any {
	writes := cp.Meta.Writes
	if writes == nil {
		writes = map[string]any{}
	}
	parents := cp.Meta.Parents
	if parents == nil {
		parents = map[string]any{}
	}
	md := map[string]any{
		"source":    cp.Meta.Source,
		"step":      cp.Meta.Step,
		"writes":    writes,
		"parents":   parents,
		"thread_id": t.ID,
	}
	if cp.Meta.GraphID != "" {
		md["graph_id"] = cp.Meta.GraphID
	}
	if cp.Meta.Base != "" {
		md["checkpoint_id"] = cp.Meta.Base
	}
	return md
}

// snapshot renders cp as a state of thread t.
func snapshot(t *threadRecord, cp *checkpoint) State {
	values := cp.Values
	if values == nil {
		values = map[string]any{}
	}
	next, tasks := pendingTasks(cp.ID, cp.Next)
	created := apiTime(cp.CreatedAt)
	id := cp.ID
	st := State{
		Values: values, Next: next, Tasks: tasks,
		Metadata:     snapshotMetadata(t, cp),
		CreatedAt:    &created,
		Checkpoint:   &CheckpointRef{CheckpointID: cp.ID, ThreadID: t.ID},
		CheckpointID: &id,
	}
	if cp.Parent != "" {
		p := cp.Parent
		st.ParentCheckpoint = &CheckpointRef{CheckpointID: p, ThreadID: t.ID}
		st.ParentCheckpointID = &p
	}
	return st
}

// emptyState is the state of a thread with no graph or no checkpoint.
func emptyState() State {
	return State{Values: map[string]any{}, Next: []string{}, Tasks: []Task{}}
}

// finishCheckpoint stamps a computed checkpoint.
func finishCheckpoint(cp *checkpoint, now time.Time, after, parent string) {
	cp.ID = nextCheckpointID(now, after)
	cp.Parent = parent
	cp.CreatedAt = now
}

// pendingTasks is a state's next nodes (never null) and their tasks.
func pendingTasks(checkpointID string, next []string) ([]string, []Task) {
	if next == nil {
		next = []string{}
	}
	tasks := make([]Task, 0, len(next))
	for _, n := range next {
		tasks = append(tasks, Task{ID: uuidFrom(checkpointID, n), Name: n, Path: []any{"__pregel_pull", n}, Interrupts: []any{}})
	}
	return next, tasks
}

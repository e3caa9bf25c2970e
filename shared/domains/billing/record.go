package billing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
	"unicode"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

const (
	// dedupWindow is how long after its time an event id is remembered.
	// Queues redeliver within their retention (SQS: at most 14 days,
	// dead-letter queues included), well inside it.
	dedupWindow = 35 * 24 * time.Hour
	// maxEventAge: older events are refused. Being below dedupWindow, it
	// guarantees that an accepted event's record has not expired yet.
	maxEventAge = 30 * 24 * time.Hour
	// maxClockSkew: events may be this far ahead of the consumer's clock.
	maxClockSkew = 24 * time.Hour
	maxIDLen     = 200
	maxQuantity  = 1_000_000_000_000
	// numQty is the counter attribute of a usage item.
	numQty = "q"
)

var metricName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Storage layout (one table; see docs/billing.md):
//
//	billing#<org>           d#<YYYY-MM-DD>#<metric>#<ws>   day counter (Nums q)
//	billing#<org>           m#<YYYY-MM>#<metric>#<ws>      month counter (Nums q)
//	billing#evt#<org>#<id>  #evt                           idempotency record (TTL)
func usagePK(org string) string { return "billing#" + org }

func dayKey(org, day, metric, ws string) store.Key {
	return store.Key{PK: usagePK(org), SK: "d#" + day + "#" + metric + "#" + ws}
}

func monthKey(org, month, metric, ws string) store.Key {
	return store.Key{PK: usagePK(org), SK: "m#" + month + "#" + metric + "#" + ws}
}

func eventKey(org, id string) store.Key {
	return store.Key{PK: "billing#evt#" + org + "#" + id, SK: "#evt"}
}

// eventRecord is what an idempotency record keeps: enough to tell a
// redelivery from a different event reusing the id.
type eventRecord struct {
	Digest string `json:"digest"`
}

func (ev Event) digest() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d\x00%s", ev.WorkspaceID, ev.Metric, ev.Quantity, ev.At.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(h[:])
}

// ParseEvent decodes and validates a TopicUsage payload. Unknown fields are
// ignored, so regions running different versions can exchange events.
func (s *Service) ParseEvent(payload []byte) (Event, error) {
	var raw struct {
		ID             *string          `json:"id"`
		OrganizationID *string          `json:"organization_id"`
		WorkspaceID    *string          `json:"workspace_id"`
		Metric         *string          `json:"metric"`
		Quantity       *json.RawMessage `json:"quantity"`
		At             *string          `json:"at"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&raw); err != nil {
		return Event{}, eventError("body", "not a JSON usage event: %v", err)
	}
	switch {
	case raw.ID == nil:
		return Event{}, eventError("id", "required")
	case raw.OrganizationID == nil:
		return Event{}, eventError("organization_id", "required")
	case raw.WorkspaceID == nil:
		return Event{}, eventError("workspace_id", "required")
	case raw.Metric == nil:
		return Event{}, eventError("metric", "required")
	case raw.Quantity == nil:
		return Event{}, eventError("quantity", "required")
	case raw.At == nil:
		return Event{}, eventError("at", "required")
	}
	ev := Event{ID: *raw.ID, OrganizationID: *raw.OrganizationID, WorkspaceID: *raw.WorkspaceID, Metric: *raw.Metric}
	if err := json.Unmarshal(*raw.Quantity, &ev.Quantity); err != nil {
		return Event{}, eventError("quantity", "must be a whole number")
	}
	at, err := time.Parse(time.RFC3339Nano, *raw.At)
	if err != nil {
		return Event{}, eventError("at", "must be an RFC 3339 time")
	}
	ev.At = at
	if err := s.validate(&ev); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// validate checks an event and puts its ids in canonical form.
func (s *Service) validate(ev *Event) error {
	if ev.ID == "" || len(ev.ID) > maxIDLen {
		return eventError("id", "must be 1 to %d bytes", maxIDLen)
	}
	for _, r := range ev.ID {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			return eventError("id", "must be printable text")
		}
	}
	org, err := uuid.Parse(ev.OrganizationID)
	if err != nil || len(ev.OrganizationID) != 36 {
		return eventError("organization_id", "must be a UUID")
	}
	ws, err := uuid.Parse(ev.WorkspaceID)
	if err != nil || len(ev.WorkspaceID) != 36 {
		return eventError("workspace_id", "must be a UUID")
	}
	ev.OrganizationID, ev.WorkspaceID = org.String(), ws.String()
	if !metricName.MatchString(ev.Metric) {
		return eventError("metric", "must match %s", metricName)
	}
	if ev.Quantity < 1 || ev.Quantity > maxQuantity {
		return eventError("quantity", "must be 1 to %d", int64(maxQuantity))
	}
	now := s.now()
	switch {
	case ev.At.IsZero():
		return eventError("at", "required")
	case ev.At.Before(now.Add(-maxEventAge)):
		return eventError("at", "is more than %s old: a redelivery could no longer be recognized", maxEventAge)
	case ev.At.After(now.Add(maxClockSkew)):
		return eventError("at", "is more than %s in the future", maxClockSkew)
	}
	ev.At = ev.At.UTC()
	return nil
}

// Consume is the consumer of TopicUsage. In the home region it records the
// event; elsewhere it forwards it to the home region. An invalid event is
// logged and returned as an error matching ErrInvalidEvent (never recorded
// or forwarded): the queue dead-letters it after its retries.
func (s *Service) Consume(ctx context.Context, payload json.RawMessage) error {
	ev, err := s.ParseEvent(payload)
	if err != nil {
		s.log.WarnContext(ctx, "billing: invalid usage event", slog.String("error", err.Error()))
		return err
	}
	if s.home != nil {
		if err := s.home.Forward(ctx, ev); err != nil {
			return fmt.Errorf("billing: forwarding usage event %s to the home region: %w", ev.ID, err)
		}
		return nil
	}
	return s.record(ctx, ev)
}

// Record counts one event in the home region; it is idempotent on
// (organization, id). Elsewhere it returns ErrNotHome and writes nothing.
func (s *Service) Record(ctx context.Context, ev Event) error {
	if s.home != nil {
		return ErrNotHome
	}
	if err := s.validate(&ev); err != nil {
		return err
	}
	return s.record(ctx, ev)
}

// record writes the idempotency record and adds the quantity to the day and
// month counters in one transaction: a redelivery fails the first
// condition and changes nothing; concurrent events add atomically.
func (s *Service) record(ctx context.Context, ev Event) error {
	day := ev.At.Format("2006-01-02")
	digest := ev.digest()
	rec, _ := json.Marshal(eventRecord{Digest: digest})
	add := map[string]int64{numQty: ev.Quantity}
	err := s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Cond: store.NotExists(), Item: store.Item{
			Key: eventKey(ev.OrganizationID, ev.ID), Data: rec, ExpiresAt: ev.At.Add(dedupWindow),
		}},
		{Kind: store.OpUpdate, Update: store.Update{Key: dayKey(ev.OrganizationID, day, ev.Metric, ev.WorkspaceID), Add: add}},
		{Kind: store.OpUpdate, Update: store.Update{Key: monthKey(ev.OrganizationID, day[:7], ev.Metric, ev.WorkspaceID), Add: add}},
	})
	var tce *store.TxConditionError
	if errors.As(err, &tce) && tce.Index == 0 {
		s.checkDuplicate(ctx, ev, digest)
		return nil
	}
	if err != nil {
		return fmt.Errorf("billing: recording usage event %s: %w", ev.ID, err)
	}
	return nil
}

// checkDuplicate logs an id reused for a different event (a publisher bug):
// it is not counted, as the first one with that id was.
func (s *Service) checkDuplicate(ctx context.Context, ev Event, digest string) {
	it, err := s.st.Get(ctx, eventKey(ev.OrganizationID, ev.ID))
	if err != nil {
		return
	}
	var rec eventRecord
	if json.Unmarshal(it.Data, &rec) == nil && rec.Digest != digest {
		s.log.WarnContext(ctx, "billing: usage event id reused for a different event; not counted",
			slog.String("organization_id", ev.OrganizationID), slog.String("event_id", ev.ID))
	}
}

// Package queue is the port for a work queue with at-least-once delivery:
// senders put small text messages (JSON), a consumer runs a handler on each,
// deletes it when the handler succeeds, makes it visible again after a delay
// when the handler fails, and moves it to a dead-letter queue after a number
// of failed receives. Adapters: memqueue (in-process, lost on exit),
// storequeue (durable, over the store port: boltstore locally) and sqsqueue
// (SQS). The suite in queuetest defines the semantics; all three pass it.
//
// gocloud.dev/pubsub was considered: its portable API has no receive count
// and no per-message retry delay, so dead-lettering and visibility-timeout
// retries would have to bypass it; a thin port over the SQS SDK is smaller.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"
)

// MaxBodySize is the largest message body, in bytes (SQS's limit).
const MaxBodySize = 256 * 1024

// ErrInvalid reports a body that no adapter can carry: empty, larger than
// MaxBodySize, not UTF-8, or with characters SQS does not allow.
var ErrInvalid = errors.New("queue: invalid message body")

// Message is one delivery of a message.
type Message struct {
	// ID identifies the message across redeliveries.
	ID   string
	Body []byte
	// Receives counts the deliveries of this message, 1 on the first.
	Receives int
}

// Handler processes one message. Returning nil acknowledges (deletes) the
// message; an error leaves it for redelivery. Handlers must be idempotent:
// delivery is at least once.
type Handler func(ctx context.Context, m Message) error

// Sender puts messages on a queue.
type Sender interface {
	// Send enqueues body. It returns ErrInvalid (wrapped) for a body
	// Validate rejects.
	Send(ctx context.Context, body []byte) error
}

// Consumer runs a handler on the messages of a queue.
type Consumer interface {
	// Consume receives messages and runs h on each until ctx is done, then
	// waits for running handlers and returns nil. It returns an error only
	// when the queue cannot be read at all.
	Consume(ctx context.Context, h Handler) error
}

// Queue is a queue that can be sent to and consumed.
type Queue interface {
	Sender
	Consumer
}

// Options tune a consumer. Zero values take the defaults.
type Options struct {
	// Concurrency is how many handlers run at once (default 4).
	Concurrency int
	// VisibilityTimeout is how long a received message stays hidden from
	// other consumers while its handler runs (default 30s). A handler that
	// runs longer may see its message delivered twice.
	VisibilityTimeout time.Duration
	// RetryDelay is how long a message stays hidden after its handler failed
	// (default 5s; negative means at once; SQS rounds it up to whole
	// seconds).
	RetryDelay time.Duration
	// MaxReceives is how many deliveries a failing message gets before it is
	// dead-lettered (default 5). Keep it equal to the SQS redrive policy's
	// maxReceiveCount.
	MaxReceives int
	// DeadLetter receives the bodies of dead-lettered messages; nil drops
	// them with an error log line.
	DeadLetter Sender
	// Logger receives consumer errors (default slog.Default()).
	Logger *slog.Logger
}

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.VisibilityTimeout <= 0 {
		o.VisibilityTimeout = 30 * time.Second
	}
	if o.RetryDelay < 0 {
		o.RetryDelay = 0
	} else if o.RetryDelay == 0 {
		o.RetryDelay = 5 * time.Second
	}
	if o.MaxReceives <= 0 {
		o.MaxReceives = 5
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Validate checks that body can be carried by every adapter. SQS accepts
// only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to
// #x10FFFF, so the in-process queue enforces the same rule.
func Validate(body []byte) error {
	if len(body) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalid)
	}
	if len(body) > MaxBodySize {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalid, len(body), MaxBodySize)
	}
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("%w: not UTF-8 at byte %d", ErrInvalid, i)
		}
		if !allowed(r) {
			return fmt.Errorf("%w: character %U at byte %d is not allowed", ErrInvalid, r, i)
		}
		i += n
	}
	return nil
}

func allowed(r rune) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	default:
		return r >= 0x10000 && r <= 0x10FFFF
	}
}

// Run calls h with panics turned into errors, so one bad message cannot
// stop a consumer. Adapters use it.
func Run(ctx context.Context, h Handler, m Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("queue: handler panicked: %v", p)
		}
	}()
	return h(ctx, m)
}

package otlp

import (
	"strconv"
	"time"

	"github.com/google/uuid"
)

// TraceUUID is the trace_id of the runs of an OTLP trace: the 16 bytes of
// the trace id read as a UUID (the inverse of the LangSmith SDKs' mapping of
// a trace UUID to an OpenTelemetry trace id).
func TraceUUID(traceID [16]byte) uuid.UUID { return uuid.UUID(traceID) }

// RunID is the id of the run of an OTLP span: the 8 span id bytes followed
// by the last 8 bytes of the trace id. It is deterministic (replays map to
// the same run), computable by a child that knows only its parent's span id,
// and it keeps the LangSmith SDKs' convention that an OpenTelemetry span id
// is the first 8 bytes of its run's UUID.
func RunID(traceID [16]byte, spanID [8]byte) uuid.UUID {
	var u uuid.UUID
	copy(u[:8], spanID[:])
	copy(u[8:], traceID[8:])
	return u
}

// dottedSegment is one dotted_order segment: the start time as
// YYYYMMDDTHHMMSSffffffZ (UTC, microseconds) followed by the run id.
func dottedSegment(start time.Time, id string) string {
	t := start.UTC()
	b := make([]byte, 0, 22+36)
	b = t.AppendFormat(b, "20060102T150405")
	us := t.Nanosecond() / 1000
	s := strconv.Itoa(us)
	for i := len(s); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, s...)
	b = append(b, 'Z')
	return string(append(b, id...))
}

// timeFormat is how run times are written: RFC 3339, UTC, microseconds.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

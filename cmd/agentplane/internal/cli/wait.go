package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/term"
)

// logPage is the largest page of build log lines the API gives.
const logPage = 1000

// logReader pages through a revision's build log from where it stopped.
type logReader struct {
	cl         *client
	depID, rev string
	offset     int
}

// next returns the lines written since the last call.
func (l *logReader) next(ctx context.Context) ([]logLine, error) {
	var out []logLine
	for {
		var p page[logLine]
		q := url.Values{"limit": {strconv.Itoa(logPage)}, "offset": {strconv.Itoa(l.offset)}}
		if err := l.cl.get(ctx, "/v2/deployments/"+seg(l.depID)+"/revisions/"+seg(l.rev)+"/logs", q, &p); err != nil {
			return out, err
		}
		out = append(out, p.Resources...)
		if p.Offset > l.offset {
			l.offset = p.Offset
		} else {
			l.offset += len(p.Resources)
		}
		if len(p.Resources) < logPage {
			return out, nil
		}
	}
}

// display shows a build's progress.
type display interface {
	status(status string, elapsed time.Duration)
	log(l logLine)
	// done ends the display (the animation stops).
	done(rev revision, elapsed time.Duration)
}

// waitRevision follows a revision until it is final, showing its status
// changes and build log lines on stderr. A revision that ends other than
// DEPLOYED is reported there with the failing step's log; the caller turns
// it into exit code 3.
func (a *app) waitRevision(ctx context.Context, cl *client, depID, revID string, wf waitFlags) (revision, json.RawMessage, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, wf.timeout)
	defer cancel()
	tty := wf.progress == "tty" || (wf.progress == "auto" && a.env.IsTerminal(a.env.Stderr))
	var disp display
	if tty {
		disp = newTTYDisplay(a.env.Stderr, terminalWidth(a.env.Stderr))
	} else {
		disp = &plainDisplay{w: a.env.Stderr}
	}
	start := time.Now()
	logs := &logReader{cl: cl, depID: depID, rev: revID}
	var lines []logLine
	last := ""
	for {
		var raw json.RawMessage
		var rev revision
		err := cl.get(ctx, "/v2/deployments/"+seg(depID)+"/revisions/"+seg(revID), nil, &raw)
		if err == nil {
			err = decodeRaw(raw, &rev)
		}
		var got []logLine
		if err == nil {
			// Read after the status: a build writes a step's lines before
			// it moves the status on, so a final status has its whole log.
			got, err = logs.next(ctx)
			lines = append(lines, got...)
		}
		if err == nil {
			// Lines written before the status changed (its updated_at)
			// are shown before it, the rest after: the true order.
			i := 0
			if rev.Status != last {
				for ; i < len(got) && !got[i].Timestamp.After(rev.UpdatedAt); i++ {
					disp.log(got[i])
				}
				disp.status(rev.Status, time.Since(start))
				last = rev.Status
			}
			for ; i < len(got); i++ {
				disp.log(got[i])
			}
		}
		if err == nil && terminal(rev.Status) {
			disp.done(rev, time.Since(start))
			if rev.Status != "DEPLOYED" {
				reportFailure(a.env.Stderr, rev, lines)
			}
			return rev, raw, nil
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(a.opts.PollInterval):
				continue
			}
		}
		disp.done(revision{Status: last}, time.Since(start))
		if parent.Err() != nil {
			return revision{}, nil, parent.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return revision{}, nil, fmt.Errorf("gave up after %s: revision %s is still %s (follow it with: agentplane logs %s/%s --follow)",
				wf.timeout, revID, last, depID, revID)
		}
		return revision{}, nil, err
	}
}

// failingStep is the step whose log explains a failure: the last step
// that is not the failure handler (Mark<STATUS>) or the sweeper.
func failingStep(lines []logLine) string {
	for i := len(lines) - 1; i >= 0; i-- {
		s := lines[i].Step
		if !strings.HasPrefix(s, "Mark") && s != "Sweep" {
			return s
		}
	}
	return ""
}

// reportFailure writes why a revision did not deploy, with the log of the
// failing step (and the failure handler's lines after it).
func reportFailure(w io.Writer, rev revision, lines []logLine) {
	msg := deref(rev.StatusMessage)
	if msg == "" {
		msg = "no reason recorded"
	}
	fmt.Fprintf(w, "\nrevision %s ended %s: %s\n", rev.ID, rev.Status, sanitize(msg))
	step := failingStep(lines)
	if step == "" {
		return
	}
	fmt.Fprintf(w, "log of the failing step %s:\n", step)
	for _, l := range lines {
		if l.Step == step || strings.HasPrefix(l.Step, "Mark") {
			fmt.Fprintf(w, "  %s\n", formatLogLine(l))
		}
	}
}

func formatLogLine(l logLine) string {
	return fmt.Sprintf("%s [%s] %s", l.Timestamp.UTC().Format("15:04:05.000"), sanitize(l.Step), sanitize(l.Message))
}

// sanitize escapes control characters (a remote's error page could hold
// terminal escapes) except newlines and tabs.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 20 {
			return width
		}
	}
	return 80
}

// plainDisplay writes one line per event: for logs, CI and pipes.
type plainDisplay struct{ w io.Writer }

func (p *plainDisplay) status(s string, elapsed time.Duration) {
	fmt.Fprintf(p.w, "status %s (%s)\n", s, elapsed.Round(100*time.Millisecond))
}

func (p *plainDisplay) log(l logLine) { fmt.Fprintln(p.w, formatLogLine(l)) }

func (p *plainDisplay) done(revision, time.Duration) {}

// ttyDisplay prints status changes and log lines above a spinner line that
// it rewrites in place.
type ttyDisplay struct {
	mu      sync.Mutex
	w       io.Writer
	width   int
	frame   int
	state   string
	start   time.Time
	current string // the latest log line, shown on the spinner line
	stopped bool
	stop    chan struct{}
	exited  chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const clearLine = "\r\033[K"

func newTTYDisplay(w io.Writer, width int) *ttyDisplay {
	d := &ttyDisplay{w: w, width: width, start: time.Now(), stop: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(d.exited)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
				d.mu.Lock()
				d.frame++
				d.draw()
				d.mu.Unlock()
			}
		}
	}()
	return d
}

// draw rewrites the spinner line; the caller holds mu.
func (d *ttyDisplay) draw() {
	if d.stopped {
		return
	}
	line := fmt.Sprintf("%s %s %s", spinnerFrames[d.frame%len(spinnerFrames)], d.state, time.Since(d.start).Round(100*time.Millisecond))
	if d.current != "" {
		first, _, _ := strings.Cut(d.current, "\n")
		line += " · " + first
	}
	fmt.Fprint(d.w, clearLine+short(line, d.width-1))
}

func (d *ttyDisplay) status(s string, elapsed time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != "" {
		mark := "✓"
		if terminal(s) && s != "DEPLOYED" {
			mark = "✗"
		}
		fmt.Fprintf(d.w, "%s%s %s\n", clearLine, mark, d.state)
	}
	d.state = s
	d.draw()
}

func (d *ttyDisplay) log(l logLine) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.w, "%s  %s\n", clearLine, formatLogLine(l))
	d.current = sanitize(l.Step) + ": " + sanitize(l.Message)
	d.draw()
}

func (d *ttyDisplay) done(rev revision, elapsed time.Duration) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.stopped = true
	close(d.stop)
	d.mu.Unlock()
	<-d.exited
	mark := "✗"
	if rev.Status == "DEPLOYED" {
		mark = "✓"
	}
	if rev.Status == "" || !terminal(rev.Status) {
		fmt.Fprint(d.w, clearLine)
		return
	}
	fmt.Fprintf(d.w, "%s%s %s in %s\n", clearLine, mark, rev.Status, elapsed.Round(100*time.Millisecond))
}

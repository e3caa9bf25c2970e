package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the API address when neither --url nor AGENTPLANE_URL is
// set: the local server's default.
const DefaultURL = "http://127.0.0.1:8000"

// errUnreachable marks a request that got no answer.
var errUnreachable = errors.New("cannot reach the API")

// maxErrorBody bounds how much of a non-JSON error answer is shown.
const maxErrorBody = 300

// client calls the platform's HTTP API.
type client struct {
	base      *url.URL
	key       string
	workspace string
	hc        *http.Client
	userAgent string
}

// setting is a value from its flag, else its environment variable.
func (a *app) setting(flag, env string) string {
	if flag != "" {
		return flag
	}
	return strings.TrimSpace(a.env.Getenv(env))
}

// baseURL is the API base URL from --url, AGENTPLANE_URL or the default.
func (a *app) baseURL() (*url.URL, error) {
	raw := a.setting(a.url, "AGENTPLANE_URL")
	if raw == "" {
		raw = DefaultURL
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("the API URL %q is not an http(s) URL (--url or AGENTPLANE_URL)", raw)
	}
	if u.User != nil {
		return nil, usageErrorf("the API URL must not carry credentials: use AGENTPLANE_API_KEY")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, usageErrorf("the API URL %q must not have a query or fragment", raw)
	}
	return u, nil
}

// client returns the API client, or an auth error without a key.
func (a *app) client() (*client, error) {
	u, err := a.baseURL()
	if err != nil {
		return nil, err
	}
	key := a.setting(a.apiKey, "AGENTPLANE_API_KEY")
	if key == "" {
		return nil, &exitError{code: ExitAuth, err: errors.New("no API key: set AGENTPLANE_API_KEY (or pass --api-key)")}
	}
	v := a.opts.Build.Version
	if v == "" {
		v = "dev"
	}
	return &client{base: u, key: key, workspace: a.setting(a.workspace, "AGENTPLANE_WORKSPACE"),
		hc: a.opts.HTTPClient, userAgent: "agentplane-cli/" + v}, nil
}

// Problem is one entry of a 422 answer.
type Problem struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// APIError is an error answer of the API.
type APIError struct {
	Method, Path string
	Status       int
	// Detail is the text of {"detail": "..."}.
	Detail string
	// Problems are the entries of a 422 {"detail": [...]}.
	Problems []Problem
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Detail != "" {
		b.WriteString(": " + sanitize(e.Detail))
		if strings.Contains(e.Detail, "X-Tenant-Id") && e.Status == http.StatusBadRequest {
			b.WriteString("\n  (choose one with --workspace or AGENTPLANE_WORKSPACE; list them with: agentplane workspaces ls)")
		}
	}
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s: %s", sanitize(formatLoc(p.Loc)), sanitize(p.Msg))
		if p.Type != "" {
			fmt.Fprintf(&b, " (%s)", p.Type)
		}
	}
	return b.String()
}

// ExitCode maps the status to the documented exit codes.
func (e *APIError) ExitCode() int {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return ExitAuth
	case http.StatusNotFound:
		return ExitNotFound
	}
	return ExitError
}

// formatLoc writes a loc such as ["body", "workspaces", 0, "role"] as
// body.workspaces[0].role.
func formatLoc(loc []any) string {
	var b strings.Builder
	for i, part := range loc {
		switch v := part.(type) {
		case float64:
			fmt.Fprintf(&b, "[%s]", strconv.FormatFloat(v, 'f', -1, 64))
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	if b.Len() == 0 {
		return "(request)"
	}
	return b.String()
}

// decodeError reads an error answer in the API's shapes, falling back to a
// bounded excerpt of anything else (a proxy's HTML page, say).
func decodeError(method, path string, res *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	e := &APIError{Method: method, Path: path, Status: res.StatusCode}
	var body struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &body) == nil && len(body.Detail) > 0 {
		if json.Unmarshal(body.Detail, &e.Detail) == nil {
			return e
		}
		if json.Unmarshal(body.Detail, &e.Problems) == nil {
			return e
		}
		e.Detail = string(body.Detail)
		return e
	}
	text := strings.TrimSpace(string(raw))
	if len(text) > maxErrorBody {
		text = text[:maxErrorBody] + "…"
	}
	e.Detail = text
	return e
}

// call sends one request. body, when not nil, is sent as JSON; out, when
// not nil, receives the decoded answer (a *json.RawMessage keeps it raw).
func (c *client) call(ctx context.Context, method, path string, q url.Values, body, out any) (http.Header, error) {
	u := *c.base
	u.Path = strings.TrimRight(c.base.Path, "/") + path
	u.RawPath = ""
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Api-Key", c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.workspace != "" {
		req.Header.Set("X-Tenant-Id", c.workspace)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The url.Error names the URL, never the key (it is a header).
		return nil, fmt.Errorf("%w at %s (is the server running? check --url or AGENTPLANE_URL): %w", errUnreachable, c.base, errors.Unwrap(err))
	}
	defer res.Body.Close()
	if res.StatusCode >= 400 {
		return res.Header, decodeError(method, path, res)
	}
	if out == nil || res.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
		return res.Header, nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return res.Header, fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return res.Header, nil
}

// getRetries is how often a GET is tried again after a 5xx answer or a
// dropped connection: reads are idempotent, and a build being followed
// should not fail on one bad answer.
var getRetries = []time.Duration{250 * time.Millisecond, time.Second}

func (c *client) get(ctx context.Context, path string, q url.Values, out any) error {
	for attempt := 0; ; attempt++ {
		_, err := c.call(ctx, http.MethodGet, path, q, nil, out)
		var apiErr *APIError
		retry := err != nil && ctx.Err() == nil &&
			(errors.As(err, &apiErr) && apiErr.Status >= 500 || errors.Is(err, errUnreachable))
		if !retry || attempt >= len(getRetries) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(getRetries[attempt]):
		}
	}
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

package toolserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/netguard"
	segjson "github.com/segmentio/encoding/json"
)

// platform is one request's client of the platform API: the caller's
// credentials, the endpoint they chose (or the default), and the transport
// that endpoint may use. It lives for one tool call.
type platform struct {
	base      string // endpoint without a trailing slash: bare LangSmith paths go under it
	root      string // base without a trailing /api/v1: /api/v1/... paths go under it
	host      string
	key       string
	workspace string
	client    *http.Client
	maxBytes  int64
	userAgent string
}

// EndpointError is a SERVICE-ENDPOINT the server will not call.
type EndpointError struct{ Reason string }

func (e *EndpointError) Error() string { return "SERVICE-ENDPOINT refused: " + e.Reason }

// PlatformError is a non-2xx answer of the platform.
type PlatformError struct {
	Status int
	Method string
	Path   string
	Detail string
	// Location is a redirect's target (redirects are not followed).
	Location string
}

func (e *PlatformError) Error() string {
	if e.Status >= 300 && e.Status < 400 {
		return fmt.Sprintf("the platform redirected %s %s (%d) to %q; set SERVICE-ENDPOINT to the platform's API URL itself", e.Method, e.Path, e.Status, e.Location)
	}
	what := "the platform answered"
	switch e.Status {
	case http.StatusUnauthorized:
		what = "the platform refused the API key:"
	case http.StatusForbidden:
		what = "the platform denied access:"
	case http.StatusNotFound:
		what = "not found on the platform:"
	}
	msg := fmt.Sprintf("%s %d for %s %s", what, e.Status, e.Method, e.Path)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// normalizeEndpoint checks the form of an endpoint URL and returns it
// without a trailing slash.
func normalizeEndpoint(raw string) (*url.URL, string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return nil, "", &EndpointError{Reason: fmt.Sprintf("%q is not an http(s) URL", raw)}
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, "", &EndpointError{Reason: "the endpoint must not carry credentials, a query or a fragment"}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, u.String(), nil
}

// platformFor builds the client of one call. The default endpoint is the
// operator's and is trusted; an endpoint the caller chose is checked
// against the hosted policy (allow-list, https, public addresses, the
// latter again at connect time).
func (s *Service) platformFor(c Credentials) (*platform, error) {
	if c.APIKey == "" {
		return nil, errMissingKey
	}
	var (
		u        *url.URL
		base     string
		err      error
		trusted  bool
		endpoint = c.Endpoint
	)
	if endpoint == "" {
		endpoint = s.defaultEndpoint
	}
	if u, base, err = normalizeEndpoint(endpoint); err != nil {
		return nil, err
	}
	trusted = base == s.defaultEndpoint
	if !trusted && len(s.allowed) > 0 && !s.allowed[base] {
		return nil, &EndpointError{Reason: fmt.Sprintf("this tool server serves only %s; for other installations run the tool server locally or from its container image", strings.Join(s.allowedList, ", "))}
	}
	var tr http.RoundTripper
	switch {
	case trusted && s.opts.DefaultTransport != nil:
		tr = s.inProcess
	case trusted || s.opts.AllowLocalEndpoints:
		tr = s.plain
	default:
		if u.Scheme != "https" {
			return nil, &EndpointError{Reason: "the hosted tool server calls only https endpoints"}
		}
		if err := netguard.CheckHost(u.Hostname()); err != nil {
			return nil, &EndpointError{Reason: fmt.Sprintf("%s is not a public address", u.Hostname())}
		}
		tr = s.guarded
	}
	return &platform{
		base:      base,
		root:      strings.TrimSuffix(base, "/api/v1"),
		host:      u.Host,
		key:       c.APIKey,
		workspace: c.WorkspaceID,
		// Redirects are not followed: the API key travels in a custom
		// header that net/http would forward to any host.
		client: &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		maxBytes:  s.opts.MaxResponseBytes,
		userAgent: "agentplane-toolserver/" + s.opts.Version,
	}, nil
}

// get calls GET base+path?query and decodes the JSON answer into out.
func (p *platform) get(ctx context.Context, path string, q url.Values, out any) error {
	return p.do(ctx, http.MethodGet, p.base, path, q, nil, out)
}

// getAPI calls an /api/v1/... path, under the endpoint's root.
func (p *platform) getAPI(ctx context.Context, path string, q url.Values, out any) error {
	return p.do(ctx, http.MethodGet, p.root, path, q, nil, out)
}

func (p *platform) post(ctx context.Context, path string, body, out any) error {
	return p.do(ctx, http.MethodPost, p.base, path, nil, body, out)
}

func (p *platform) do(ctx context.Context, method, base, path string, q url.Values, body, out any) error {
	target := base + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return &EndpointError{Reason: err.Error()}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", p.userAgent)
	req.Header.Set("X-API-Key", p.key)
	if p.workspace != "" {
		req.Header.Set("X-Tenant-Id", p.workspace)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return p.transportError(ctx, method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return &PlatformError{Status: resp.StatusCode, Method: method, Path: path, Detail: errorDetail(raw), Location: resp.Header.Get("Location")}
	}
	raw, err := readBody(resp)
	if err != nil {
		return p.transportError(ctx, method, path, err)
	}
	if err := decodeJSON(raw, out); err != nil {
		return fmt.Errorf("the platform's answer to %s %s is not the expected JSON: %s", method, path, jsonProblem(err))
	}
	return nil
}

// readBody reads a whole response body (bounded by the transport), sized
// up front from Content-Length so a large answer is not copied as it grows.
func readBody(resp *http.Response) ([]byte, error) {
	if resp.ContentLength <= 0 || resp.ContentLength > DefaultMaxResponseBytes {
		return io.ReadAll(resp.Body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, resp.ContentLength+1))
	_, err := buf.ReadFrom(resp.Body)
	return buf.Bytes(), err
}

// decodeJSON decodes a platform answer: numbers kept as written
// (json.Number), strings pointing into body instead of copied (body is
// never reused). segmentio/encoding parses several times faster than
// encoding/json, into the same types.
func decodeJSON(body []byte, out any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return io.EOF
	}
	rest, err := segjson.Parse(body, out, segjson.UseNumber|segjson.DontCopyString|segjson.DontCopyNumber)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// jsonProblem describes a decoding error in JSON's terms, not Go's.
func jsonProblem(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		want := "another value"
		switch ute.Type.Kind() {
		case reflect.Slice, reflect.Array:
			want = "an array"
		case reflect.Map, reflect.Struct:
			want = "an object"
		case reflect.String:
			want = "a string"
		}
		where := ""
		if ute.Field != "" {
			where = " at " + ute.Field
		}
		return fmt.Sprintf("found %s where %s was expected%s", jsonKind(ute.Value), want, where)
	}
	if errors.Is(err, io.EOF) {
		return "the body is empty"
	}
	return clip(strings.TrimPrefix(err.Error(), "json: "), 300)
}

// jsonKind names the kind of a JSON value from its text or kind name.
func jsonKind(v string) string {
	v = strings.TrimSpace(v)
	if u, err := strconv.Unquote(v); err == nil && u != "" && strings.ContainsAny(u[:1], "{[\"tfn-0123456789") {
		v = u // segmentio/encoding quotes the offending value's text
	}
	if v == "" {
		return "a value"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		if v == "null" {
			return "null"
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	switch v {
	case "object", "array", "string", "number", "bool":
		return "a JSON " + v
	}
	return clip(v, 40)
}

// transportError says why a call did not get an answer, without internals
// the caller cannot act on.
func (p *platform) transportError(ctx context.Context, method, path string, err error) error {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, netguard.ErrNonPublic):
		return &EndpointError{Reason: fmt.Sprintf("%s resolves to a non-public address; the hosted tool server calls only public endpoints", p.host)}
	case errors.Is(err, netguard.ErrTooLarge):
		return fmt.Errorf("the platform's answer to %s %s exceeded %d bytes", method, path, p.maxBytes)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the platform at %s did not answer %s %s in time", p.host, method, path)
	case ctx.Err() != nil:
		return fmt.Errorf("the call was cancelled: %w", ctx.Err())
	case errors.As(err, &dnsErr):
		return fmt.Errorf("cannot resolve the platform host %s", dnsErr.Name)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach the platform at %s: %v", p.host, err)
}

// errorDetail extracts the text of a FastAPI {"detail": ...} body, or a
// short prefix of another body.
func errorDetail(raw []byte) string {
	var body struct {
		Detail any    `json:"detail"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil {
		switch d := body.Detail.(type) {
		case string:
			return d
		case nil:
			if body.Error != "" {
				return body.Error
			}
		default:
			b, _ := json.Marshal(d)
			return clip(string(b), 500)
		}
	}
	return clip(strings.TrimSpace(string(raw)), 500)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

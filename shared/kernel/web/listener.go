package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// ListenerOptions configure Listen.
type ListenerOptions struct {
	// MaxConnsPerClient bounds the open connections of one client: one
	// IPv4 address, or one IPv6 /64 (what one host usually holds). A
	// connection over the limit is answered 429 at once and closed; it
	// is not queued. 0: no limit.
	MaxConnsPerClient int
	// MaxHeaderBytes is the server's header limit (http.Server's
	// MaxHeaderBytes), named in the 431 answer.
	MaxHeaderBytes int
}

// Listen wraps ln for an HTTP/1 server: it enforces
// MaxConnsPerClient, and it turns the plain-text errors net/http writes by
// itself, before any handler runs (431 for headers over MaxHeaderBytes,
// 400 for a malformed request, 501 for an unknown transfer encoding),
// into the interface's JSON {"detail": ...}, so every error is JSON.
func Listen(ln net.Listener, o ListenerOptions) net.Listener {
	return &listener{Listener: ln, o: o, open: map[netip.Prefix]int{}}
}

type listener struct {
	net.Listener
	o    ListenerOptions
	mu   sync.Mutex
	open map[netip.Prefix]int
}

// clientOf groups an address: an IPv4 address alone, an IPv6 address by
// its /64.
func clientOf(a net.Addr) (netip.Prefix, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{}, false
	}
	ip := ap.Addr().Unmap()
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32), true
	}
	p, err := ip.Prefix(64)
	return p, err == nil
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		jc := &jsonErrConn{Conn: c, maxHeader: l.o.MaxHeaderBytes}
		if l.o.MaxConnsPerClient <= 0 {
			return jc, nil
		}
		client, ok := clientOf(c.RemoteAddr())
		if !ok {
			return jc, nil
		}
		l.mu.Lock()
		n := l.open[client]
		if n >= l.o.MaxConnsPerClient {
			l.mu.Unlock()
			go refuse(c, l.o.MaxConnsPerClient)
			continue
		}
		l.open[client] = n + 1
		l.mu.Unlock()
		jc.release = func() {
			l.mu.Lock()
			if l.open[client]--; l.open[client] <= 0 {
				delete(l.open, client)
			}
			l.mu.Unlock()
		}
		return jc, nil
	}
}

// refuse answers a connection over the limit with a 429 and closes it,
// after letting the client finish sending its request for a moment, so
// that it reads the answer rather than a reset.
func refuse(c net.Conn, limit int) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = c.Write(rawResponse(http.StatusTooManyRequests, fmt.Sprintf(
		"Too many open connections from your address (at most %d): close idle connections or retry later", limit),
		"Retry-After: 1\r\n"))
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, c, 64<<10)
}

// rawResponse is a complete HTTP/1.1 JSON error response that closes the
// connection.
func rawResponse(status int, detail, extraHeaders string) []byte {
	body, _ := json.Marshal(map[string]string{"detail": detail})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n%s",
		status, http.StatusText(status), len(body), extraHeaders, body)
}

// jsonErrConn rewrites net/http's own error responses. They are written
// straight to the connection in one Write, always with these headers,
// which no handler of this service writes (every handler answers JSON).
type jsonErrConn struct {
	net.Conn
	maxHeader int
	once      sync.Once
	release   func()
}

var plainErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

func (c *jsonErrConn) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) || !bytes.Contains(p, plainErrorHeaders) {
		return c.Conn.Write(p)
	}
	status, err := strconv.Atoi(string(p[9:min(12, len(p))]))
	if err != nil {
		return c.Conn.Write(p)
	}
	line, _, _ := bytes.Cut(p, plainErrorHeaders)
	// "HTTP/1.1 400 Bad Request: missing required Host header"
	detail := string(line[min(13, len(line)):])
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		detail = "Request header fields too large"
		if c.maxHeader > 0 {
			detail = fmt.Sprintf("Request header fields too large: the request line and headers may take at most %d bytes", c.maxHeader)
		}
	case http.StatusNotImplemented:
		detail = "Unsupported transfer encoding"
	}
	if _, err := c.Conn.Write(rawResponse(status, detail, "")); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close the connection (it does before
// hanging up after a 431).
func (c *jsonErrConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *jsonErrConn) Close() error {
	err := c.Conn.Close()
	if c.release != nil {
		c.once.Do(c.release)
	}
	return err
}

// Package lambdaproxy runs a net/http handler as a Lambda function behind an
// API Gateway REST API (proxy integration, payload format 1.0), through
// aws-lambda-go-api-proxy.
//
// The adapter turns a response whose handler never wrote a status into an
// error, which API Gateway answers with a 502; Handler guards against that
// by giving every response the status net/http would have sent (200), and
// turns a panic that escapes the handler into a JSON 500 instead of a
// crashed invocation.
package lambdaproxy

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// Func is the Lambda handler of a REST API proxy integration.
type Func func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// Start serves h on the Lambda runtime; it does not return.
func Start(h http.Handler) { lambda.Start(Handler(h)) }

// Handler adapts h to a REST API proxy integration.
func Handler(h http.Handler) Func {
	return httpadapter.New(Guard(h)).ProxyWithContext
}

// Guard makes h's responses complete the way net/http completes them: the
// first status written wins, a handler that writes nothing sends 200, and a
// panic becomes a 500 with the interface's error shape (when nothing was
// written yet).
func Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := &guard{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.Error("lambdaproxy: handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
				if !g.wrote {
					g.Header().Set("Content-Type", "application/json")
					g.WriteHeader(http.StatusInternalServerError)
					_, _ = g.Write([]byte(`{"detail":"Internal server error"}`))
				}
				return
			}
			if !g.wrote {
				g.WriteHeader(http.StatusOK)
			}
		}()
		h.ServeHTTP(g, r)
	})
}

// guard records whether a status was sent, and drops later ones (the
// adapter's writer would let a second WriteHeader overwrite the first).
type guard struct {
	http.ResponseWriter
	wrote bool
}

func (g *guard) WriteHeader(status int) {
	if g.wrote || status < 200 || status > 999 {
		// Informational statuses cannot be sent through API Gateway, and
		// net/http would not let a second status replace the first.
		return
	}
	g.wrote = true
	g.ResponseWriter.WriteHeader(status)
}

func (g *guard) Write(b []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	return g.ResponseWriter.Write(b)
}

// Flush is accepted (and buffered: a proxy integration has no streaming),
// so handlers that flush still work.
func (g *guard) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the adapter's writer.
func (g *guard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

package regions

import (
	"fmt"
	"net/http"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Headers of a misdirected answer, for clients that act on it.
const (
	HeaderHomeRegion = "X-Agentplane-Home-Region"
	HeaderHomeAPIURL = "X-Agentplane-Home-Api-Url"
)

// StatusMisdirected is the status of a request that reached a region that
// is not its organization's home: 421 Misdirected Request (this server is
// not the one to answer it; the detail and the headers name the one that
// is). Nothing is read or stored on the way.
const StatusMisdirected = http.StatusMisdirectedRequest

// MisdirectedError says that what a request addresses lives in another
// region. Over HTTP it is a 421 (errors.As into a *web.Error gives the
// answer); it unwraps to the local cause (the credential unknown here,
// say), so callers that do not know it keep their old answer.
type MisdirectedError struct {
	// Home is the region the organization's data lives in.
	Home Name
	// Here is the region that received the request.
	Here Name
	// APIURL is the home region's API URL ("" when not configured).
	APIURL string
	// What names what was addressed ("This API key's organization").
	What  string
	cause error
}

func (e *MisdirectedError) Error() string { return e.Detail() }

// Unwrap returns the local cause.
func (e *MisdirectedError) Unwrap() error { return e.cause }

// Detail is the answer's text: where to send the request instead.
func (e *MisdirectedError) Detail() string {
	what := e.What
	if what == "" {
		what = "This organization"
	}
	where := "its regional API"
	if e.APIURL != "" {
		where = e.APIURL
	}
	return fmt.Sprintf("%s is in the %s region, and its data is kept and served only there: send this request to %s (this is the %s region; nothing was stored here)",
		what, e.Home.Label(), where, e.Here.Label())
}

// Header returns the headers that name the home region.
func (e *MisdirectedError) Header() http.Header {
	h := http.Header{HeaderHomeRegion: {string(e.Home)}}
	if e.APIURL != "" {
		h.Set(HeaderHomeAPIURL, e.APIURL)
	}
	return h
}

// HTTP is the 421 answer.
func (e *MisdirectedError) HTTP() *web.Error {
	return &web.Error{Status: StatusMisdirected, Detail: e.Detail(), Header: e.Header()}
}

// As lets errors.As(err, &webErr) find the HTTP answer, so web.WriteError
// answers a MisdirectedError as a 421.
func (e *MisdirectedError) As(target any) bool {
	if t, ok := target.(**web.Error); ok {
		*t = e.HTTP()
		return true
	}
	return false
}

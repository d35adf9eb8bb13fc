package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// freeBodyBytes is what a request may buffer without charging the body
// budget: the capacity of a fresh pooled buffer. Small bodies, the common
// case, cost no accounting at all. What they hold together is bounded by the
// number of open connections (ConnLimiter).
const freeBodyBytes = 4096

// Errors of the body reader.
var (
	errBodyBudget  = busy("Server busy: too many request bodies in flight")
	errBodyTimeout = newProtocolError(http.StatusRequestTimeout, mcp.NewError(mcp.CodeInvalidRequest, "Invalid Request: body not received in time"))
)

// busy is an HTTP 503 asking the client to retry after a second.
func busy(msg string) *protocolError {
	return &protocolError{
		status: http.StatusServiceUnavailable,
		err:    mcp.NewError(mcp.CodeInternalError, msg),
		header: http.Header{"Retry-After": {"1"}},
	}
}

// bodyBudget bounds the bytes all requests together buffer for their bodies
// beyond freeBodyBytes each. It is charged as data arrives, never for what a
// Content-Length header announces, and refunded when the request ends.
type bodyBudget struct {
	used atomic.Int64
	max  int64
}

// take charges n bytes, or charges nothing and reports false when that
// would exceed the budget.
func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

// give refunds n bytes charged by take.
func (b *bodyBudget) give(n int64) {
	if n != 0 {
		b.used.Add(-n)
	}
}

// deadliner is the part of net/http's ResponseWriter that sets the
// connection's read deadline; asserting it directly avoids the allocation of
// an http.ResponseController on the fast path.
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// setReadDeadline sets the read deadline of the connection under w, through
// any wrappers that implement Unwrap. A writer that cannot (test recorders,
// writers without Unwrap) is left without one.
func setReadDeadline(w http.ResponseWriter, t time.Time) {
	switch d := w.(type) {
	case deadliner:
		d.SetReadDeadline(t)
	case interface{ Unwrap() http.ResponseWriter }:
		http.NewResponseController(w).SetReadDeadline(t)
	}
}

// readBody reads the whole body into buf, bounded by MaxBodyBytes, the body
// budget and BodyReadTimeout. The buffer grows only as data arrives, at most
// doubling, so a Content-Length announced but not sent costs nothing. It
// returns the bytes charged to the budget, which the caller refunds once the
// body is no longer used, also on error.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, int64, *protocolError) {
	if r.ContentLength > s.opts.MaxBodyBytes {
		return buf, 0, errBodyTooLarge
	}
	setReadDeadline(w, time.Now().Add(s.opts.BodyReadTimeout))
	buf, charged, perr := s.fillBody(w, r, buf)
	if perr == nil {
		// The handler may run for long (streamed responses, listens); a
		// deadline left on the connection would end its background read
		// and cancel the request's context.
		setReadDeadline(w, time.Time{})
	}
	return buf, charged, perr
}

// abandonBody is for a request answered without reading its whole body:
// the connection closes after the response, and what net/http would still
// read of the body before closing (it drains up to 256 KiB) fails at once,
// so a client that stalls its body cannot hold the connection.
func abandonBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return // no body: the connection may stay
	}
	w.Header()["Connection"] = connClose
	setReadDeadline(w, pastDeadline)
}

// pastDeadline makes every read fail at once.
var pastDeadline = time.Unix(1, 0)

// fillBody is the reading loop of readBody.
func (s *Server) fillBody(w http.ResponseWriter, r *http.Request, buf []byte) (_ []byte, charged int64, _ *protocolError) {
	limit := s.opts.MaxBodyBytes
	cl := r.ContentLength // -1 when unknown
	body := http.MaxBytesReader(w, r.Body, limit)
	// window is how much of buf may be filled: the free allowance plus what
	// has been charged. It never exceeds the capacity of a buffer this
	// function allocated.
	window := int64(freeBodyBytes)
	for {
		if int64(len(buf)) == window {
			if cl >= 0 && int64(len(buf)) == cl {
				// Everything announced has arrived; expect EOF without
				// spending more budget.
				n, err := body.Read(make([]byte, 1))
				if n == 0 && err == io.EOF {
					return buf, charged, nil
				}
				if n > 0 || err == nil {
					// More than announced: net/http does not deliver it,
					// but be exact anyway.
					return buf, charged, errBodyTooLarge
				}
				return buf, charged, bodyReadError(err)
			}
			step := max(int64(len(buf)), freeBodyBytes) // double
			if cl >= 0 {
				step = min(step, cl-int64(len(buf)))
			}
			step = min(step, limit+1-int64(len(buf))) // room to see "too large"
			if !s.budget.take(step) {
				return buf, charged, errBodyBudget
			}
			charged += step
			window += step
		}
		if int64(cap(buf)) < window {
			nb := make([]byte, len(buf), window)
			copy(nb, buf)
			buf = nb
		}
		n, err := body.Read(buf[len(buf):window])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, charged, nil
		}
		if err != nil {
			return buf, charged, bodyReadError(err)
		}
	}
}

// bodyReadError is the client's answer to a failed body read.
func bodyReadError(err error) *protocolError {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return errBodyTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errBodyTimeout
	}
	return invalidRequest("Invalid Request: body could not be read")
}

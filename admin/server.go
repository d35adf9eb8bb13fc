package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts of the http.Server of Listen: the admin endpoints answer small
// requests quickly, and a scrape of a slow store is bounded well within
// writeTimeout.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
)

// Server is an admin listener: h on an http.Server of its own, with read,
// write and idle timeouts. Start it with Listen or Serve and stop it with
// Shutdown, which ends its serving goroutine.
type Server struct {
	hs   *http.Server
	addr string
	done chan struct{} // closed when Serve has returned
	err  error         // Serve's unexpected error, read after done
}

// Listen listens on addr (host:port; port 0 picks a free one) and serves h
// there until Shutdown. It fails when the address cannot be listened on.
// Errors of the HTTP server go to logger (nil discards them).
func Listen(addr string, h http.Handler, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	return Serve(ln, h, logger), nil
}

// Serve serves h on ln, a listener the caller bound (for a program that
// binds its ports before anything else), until Shutdown, which closes ln.
// Errors of the HTTP server go to logger (nil discards them).
func Serve(ln net.Listener, h http.Handler, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		hs: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		addr: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s
}

// Addr returns the address listened on, with the port chosen.
func (s *Server) Addr() string { return s.addr }

// Shutdown stops listening, lets requests in flight finish until ctx ends
// (then closes their connections), and returns once the serving goroutine
// has ended, with the error that stopped it if it stopped by itself.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.hs.Shutdown(ctx)
	if err != nil {
		s.hs.Close()
	}
	<-s.done
	return errors.Join(err, s.err)
}

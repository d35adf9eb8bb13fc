package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// listenPrefix starts the line on which "mcpbench serve" announces its
// address; the harness reads it from the subprocess's standard output.
const listenPrefix = "listening on "

// runServe implements "mcpbench serve": it serves one target on a loopback
// address until it is interrupted, its standard input reaches EOF (with
// -exit-on-stdin-eof), or -max-lifetime passes.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpbench serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("target", "", "target to serve: taskwire, gosdk or bare (required)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on; port 0 picks a free port")
	exitOnEOF := fs.Bool("exit-on-stdin-eof", false, "stop when standard input reaches EOF (used by the harness so that servers die with it)")
	maxLifetime := fs.Duration("max-lifetime", 10*time.Minute, "stop after this long in any case")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve: unexpected arguments %q", fs.Args())}
	}
	if *name == "" {
		return usageError{"serve: -target is required"}
	}
	if *maxLifetime <= 0 {
		return usageError{"serve: -max-lifetime must be positive"}
	}
	t, err := lookupTarget(*name)
	if err != nil {
		return err
	}
	if t.Unavailable != "" {
		return fmt.Errorf("serve %s: %s", t.Name, t.Unavailable)
	}

	ctx, cancel := context.WithTimeout(ctx, *maxLifetime)
	defer cancel()
	if *exitOnEOF {
		go func() {
			// Nothing is ever written to our stdin: any read returns when
			// the parent closes the pipe or exits.
			_, _ = io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}

	srv, err := startServerOn(t, *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s%s\n", listenPrefix, srv.Addr())
	select {
	case <-ctx.Done():
	case err := <-srv.done:
		return fmt.Errorf("serve %s: %w", t.Name, err)
	}
	return srv.Close()
}

// loopbackListen listens on addr, which must name a loopback host.
func loopbackListen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Sprintf("bad address %q: %v", addr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usageError{fmt.Sprintf("address %q is not a loopback address: mcpbench only serves on 127.0.0.0/8, ::1 or localhost", addr)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// server is a target served in this process.
type server struct {
	ln   net.Listener
	http *http.Server
	// done receives the error that ends http.Server.Serve, if it ends
	// before Close is called.
	done chan error
}

// startServer builds t's handler and serves it on a free 127.0.0.1 port.
func startServer(t target) (*server, error) {
	return startServerOn(t, "127.0.0.1:0")
}

// startServerOn builds t's handler and serves it on the loopback address addr.
func startServerOn(t target, addr string) (*server, error) {
	h, err := t.NewHandler()
	if err != nil {
		return nil, fmt.Errorf("build %s handler: %w", t.Name, err)
	}
	ln, err := loopbackListen(addr)
	if err != nil {
		return nil, err
	}
	s := &server{
		ln: ln,
		http: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
		},
		done: make(chan error, 1),
	}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.done <- err
		}
	}()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *server) Addr() string { return s.ln.Addr().String() }

// Close shuts the server down, giving in-flight requests a moment to finish.
func (s *server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		_ = s.http.Close()
		return fmt.Errorf("shut down server on %s: %w", s.Addr(), err)
	}
	return nil
}

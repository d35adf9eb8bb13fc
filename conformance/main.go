// Command conformance serves the fixture endpoint that the official MCP
// conformance suite exercises, at http://ADDR/mcp.
//
//	go run ./conformance --addr 127.0.0.1:8081
//
// scripts/conformance.sh builds it, starts one process on a free loopback
// port and runs the suite against it three times: the 2025-06-18 and
// 2025-11-25 scenarios (sessions) and the 2026-07-28 requirement set, all on
// the same URL. conformance/baseline.txt lists the tasks-* scenarios that may
// still fail in the 2026-07-28 run (none); see conformance/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/conformance/fixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "loopback `address` to listen on")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*addr, logger); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(addr string, logger *slog.Logger) error {
	h, err := fixture.New(fixture.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Printf("conformance fixture listening at http://%s%s\n", ln.Addr(), fixture.Path)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	<-errc
	return nil
}

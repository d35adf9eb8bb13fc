package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	twserver "github.com/taskwire/taskwire/server"
)

// gatewayUpstreamTimeout bounds connecting the gateway to its upstream and
// listing its tools when the target is built.
const gatewayUpstreamTimeout = 10 * time.Second

// newGatewayHandler builds the gateway target: the gosdk server (the very
// handler of the gosdk target) on a loopback port of its own, and in front
// of it a taskwire server whose endpoint serves that upstream's tools
// through package gateway. test_simple_text is no task tool, so every call
// passes through inline: the downstream request is decoded and checked by
// taskwire, forwarded by the gateway's client over loopback HTTP, and the
// upstream's result relayed. Compared with the gosdk target in the same
// run, the difference is what the gateway adds to a call.
//
// The upstream listener and server live as long as the process serving the
// target (mcpbench serve, which exits when the harness closes its input).
func newGatewayHandler() (http.Handler, error) {
	up, err := newGoSDKHandler()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gateway target: upstream listener: %w", err)
	}
	upstream := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := upstream.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "gateway target: upstream server: %v\n", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), gatewayUpstreamTimeout)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Options{
		Upstream:    "http://" + ln.Addr().String() + endpointPath,
		MaxInFlight: gateway.MaxMaxInFlight,
	})
	if err != nil {
		_ = upstream.Close()
		return nil, fmt.Errorf("gateway target: %w", err)
	}
	ep := twserver.NewEndpoint(twserver.EndpointOptions{Path: endpointPath, Name: "mcpbench-gateway", Version: "1.0.0"})
	var tools durable.Set // no task tools: every call passes through
	if err := g.Register(ep, &tools); err != nil {
		_ = upstream.Close()
		return nil, fmt.Errorf("gateway target: %w", err)
	}
	srv, err := twserver.New(twserver.Options{Endpoints: []*twserver.Endpoint{ep}})
	if err != nil {
		_ = upstream.Close()
		return nil, fmt.Errorf("gateway target: %w", err)
	}
	return srv, nil
}

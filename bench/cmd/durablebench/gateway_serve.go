package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/server"
)

// gatewayUpstream is the upstream of the gateway e2e phases: the official
// go-sdk server with one tool, benchKind, that returns its arguments as
// its structured result, over stateless Streamable HTTP on loopback.
type gatewayUpstream struct {
	hs   *http.Server
	url  string
	done chan struct{}
}

// startGatewayUpstream serves the upstream until close; errors of its
// server go to stderr.
func startGatewayUpstream(stderr io.Writer) (*gatewayUpstream, error) {
	s := sdk.NewServer(&sdk.Implementation{Name: "durablebench-upstream", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: benchKind, Description: "Returns its arguments."},
		func(_ context.Context, _ *sdk.CallToolRequest, in benchArgs) (*sdk.CallToolResult, benchArgs, error) {
			return nil, in, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gateway upstream: %w", err)
	}
	u := &gatewayUpstream{
		hs:   &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		url:  "http://" + ln.Addr().String() + "/mcp",
		done: make(chan struct{}),
	}
	go func() {
		defer close(u.done)
		if err := u.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "gateway upstream: %v\n", err)
		}
	}()
	return u, nil
}

// close stops the upstream server and waits for it.
func (u *gatewayUpstream) close() {
	_ = u.hs.Close()
	<-u.done
}

// serveThroughGateway registers benchKind on ep as a task tool of a gateway
// in front of upstreamURL, enqueueing in enq, before the server is built.
// It returns the gateway, to close after the server and the worker have
// stopped, and the durable set whose Work registers the worker side.
func serveThroughGateway(ctx context.Context, upstreamURL string, ep *server.Endpoint, enq backend.Enqueuer) (*gateway.Gateway, *durable.Set, error) {
	g, err := gateway.New(ctx, gateway.Options{
		Upstream:    upstreamURL,
		TaskTools:   []string{benchKind},
		MaxInFlight: gateway.MaxMaxInFlight,
		Logger:      warnLogger(),
	})
	if err != nil {
		return nil, nil, err
	}
	tools := new(durable.Set)
	err = g.Register(ep, tools)
	if err == nil {
		err = tools.Serve(ep, enq)
	}
	if err != nil {
		_ = g.Close()
		return nil, nil, err
	}
	return g, tools, nil
}

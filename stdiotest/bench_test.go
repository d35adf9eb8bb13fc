package stdiotest

import (
	"context"
	"io"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	twmcp "github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// EchoIn and EchoOut are the echo tool of both servers.
type EchoIn struct {
	Text string `json:"text"`
}

type EchoOut struct {
	Echo string `json:"echo"`
}

// pipes returns the two ends of a stdio connection over OS pipes, as a
// host and its subprocess have: the server reads serverIn and writes
// serverOut; the client the other ends.
func pipes(b *testing.B) (serverIn, serverOut, clientIn *os.File, clientOut *os.File) {
	b.Helper()
	r1, w1, err := os.Pipe() // client -> server
	if err != nil {
		b.Fatal(err)
	}
	r2, w2, err := os.Pipe() // server -> client
	if err != nil {
		b.Fatal(err)
	}
	return r1, w2, r2, w1
}

// startTaskwire serves an echo tool with ServeStdio on the pipes.
func startTaskwire(b *testing.B, in io.Reader, out io.WriteCloser) func() {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "bench", Version: "1.0.0"})
	server.AddTool(ep, &twmcp.Tool{Name: "echo"}, func(_ context.Context, _ *server.Request, in EchoIn) (*twmcp.CallToolResult, EchoOut, error) {
		return nil, EchoOut{Echo: in.Text}, nil
	})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeStdio(context.Background(), in, out, server.StdioOptions{})
		out.Close()
	}()
	return func() { <-done }
}

// startGoSDK serves the same tool with the go-sdk server on the pipes.
func startGoSDK(b *testing.B, in io.ReadCloser, out io.WriteCloser) func() {
	s := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in EchoIn) (*sdk.CallToolResult, EchoOut, error) {
		return nil, EchoOut{Echo: in.Text}, nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(context.Background(), &sdk.IOTransport{Reader: in, Writer: out})
	}()
	return func() { <-done }
}

// BenchmarkStdioToolCall measures inline tools/call round trips over OS
// pipes, one at a time, from the same go-sdk v1.8.0 client to taskwire's
// ServeStdio and to the go-sdk's own stdio server, each serving one echo
// tool. Both negotiate 2026-07-28 (server/discover); "legacy" runs the
// client at 2025-11-25 (initialize, one session).
//
//	cd stdiotest && go test -run '^$' -bench StdioToolCall -benchtime 3s -count 3
func BenchmarkStdioToolCall(b *testing.B) {
	servers := []struct {
		name  string
		start func(*testing.B, io.ReadCloser, io.WriteCloser) func()
	}{
		{"taskwire", func(b *testing.B, in io.ReadCloser, out io.WriteCloser) func() { return startTaskwire(b, in, out) }},
		{"go-sdk", startGoSDK},
	}
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, sv := range servers {
			b.Run(sv.name+"/"+version, func(b *testing.B) {
				sIn, sOut, cIn, cOut := pipes(b)
				wait := sv.start(b, sIn, sOut)
				client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1.0.0"}, nil)
				ctx := context.Background()
				cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: cIn, Writer: cOut}, &sdk.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					b.Fatal(err)
				}
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					b.Fatalf("negotiated %s, want %s", got, version)
				}
				params := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
				b.ReportAllocs()
				for b.Loop() {
					res, err := cs.CallTool(ctx, params)
					if err != nil || res.IsError {
						b.Fatalf("call: %v %+v", err, res)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
				cs.Close() // closes the client's write end: the server sees EOF
				wait()
				sIn.Close()
				cIn.Close()
			})
		}
	}
}

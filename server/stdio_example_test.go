package server_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
)

// GreetInput is the input of the stdio example's tool.
type GreetInput struct {
	Name string `json:"name"`
}

// A local server that a host starts as a subprocess: the same endpoint as
// over HTTP, served on standard input and output. Logs go to stderr only;
// stdout carries nothing but protocol messages. (Here the input is a
// string and the output os.Stdout, so that the example runs.)
func ExampleServer_ServeStdio() {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "greeter", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "greet"},
		func(_ context.Context, _ *server.Request, in GreetInput) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name}}}, nil, nil
		})
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, nil)), // never stdout
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	stdin := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n")
	// In a real server: srv.ServeStdio(ctx, os.Stdin, os.Stdout, server.StdioOptions{}).
	// It returns once stdin ends and the running requests are answered.
	if err := srv.ServeStdio(context.Background(), stdin, os.Stdout, server.StdioOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"Hello, Ada"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"greeter","version":"1.0.0"}}}}
}

// The main of a stdio server with durable tasks, as docs/stdio.md shows it:
// it stops on EOF, SIGINT or SIGTERM. (Compiled, not run: it reads the
// process's stdin.)
func ExampleServer_ServeStdio_main() {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "local", Version: "1.0.0"})
	store, _ := memory.New(memory.Options{}) // use store/sqlite for tasks that outlive the process
	srv, err := server.New(server.Options{
		Endpoints:   []*server.Endpoint{ep},
		TaskManager: store, // a durable store, such as store/sqlite
		// Logs go to stderr: stdout carries protocol messages only.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = srv.ServeStdio(ctx, os.Stdin, os.Stdout, server.StdioOptions{})
	if err != nil {
		log.Fatal(err)
	}
}

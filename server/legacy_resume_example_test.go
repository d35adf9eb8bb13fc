package server_test

import (
	"context"
	"log"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// A long tool call of a 2025-11-25 client ends the POST's response early,
// with a retry field, and keeps working; the client resumes the stream
// with GET and Last-Event-ID and receives the result there. Elsewhere
// (2026-07-28, 2025-06-18) CloseSSEStream returns ErrNotResumable and the
// call answers on its own stream as usual.
func ExampleRequest_CloseSSEStream() {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "reports", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "report", Description: "Builds a report."},
		func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			_ = req.CloseSSEStream(2 * time.Second) // the client comes back in 2 s
			// ... the work goes on; ctx is not canceled by the close ...
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ready"}}}, nil, nil
		})
	_, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep},
		Sessions: &server.SessionOptions{
			Resume: &server.ResumeOptions{
				Retry:              time.Second,      // retry field of each priming event
				MaxEvents:          512,              // kept per session
				MaxBytes:           1 << 20,          // kept per session
				MaxNodeBytes:       64 << 20,         // kept by this node
				Retention:          2 * time.Minute,  // kept after the call ended
				InlinePollInterval: 50 * time.Second, // inline waits close each connection after this
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
}

package client_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

type greetIn struct {
	Name string `json:"name"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// Example connects to a taskwire server, lists its tools and calls one.
// A call may also come back as a task: Wait follows it to its result.
func Example() {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "greeter", Version: "1.0.0"})
	server.AddTool[greetIn, greetOut](ep, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, _ *server.Request, in greetIn) (*mcp.CallToolResult, greetOut, error) {
			return nil, greetOut{Greeting: "Hello, " + in.Name}, nil
		})
	h, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	c, err := client.New(srv.URL+"/mcp", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	tools, err := c.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tool:", tools[0].Name)

	res, err := c.Call(ctx, "greet", map[string]string{"name": "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	out := res.Result
	if res.Task != nil { // the server chose to run the call as a task
		if out, err = res.Task.Wait(ctx); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("result:", string(out.StructuredContent))
	fmt.Println("protocol:", c.ProtocolVersion())
	// Output:
	// tool: greet
	// result: {"greeting":"Hello, Ada"}
	// protocol: 2026-07-28
}

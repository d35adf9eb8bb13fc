package oauth_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// ExampleNew protects an MCP endpoint with access tokens from one issuer:
// tools/call of "reports" needs the scope reports:write, and the metadata
// is served next to the endpoint.
func ExampleNew() {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "reports", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "reports"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	rs, err := oauth.New(oauth.Options{
		Resource:   "https://mcp.example.com/mcp",
		Issuer:     "https://id.example.com",
		JWKSURL:    "https://id.example.com/.well-known/jwks.json",
		ToolScopes: map[string][]string{"reports": {"reports:write"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: rs})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	handler := rs.WithMetadata(srv) // serve with http.ListenAndServe(addr, handler)
	_ = http.Handler(handler)
	fmt.Println(rs.MetadataURL())
	fmt.Println(rs.MetadataPaths())
	// Output:
	// https://mcp.example.com/.well-known/oauth-protected-resource/mcp
	// [/.well-known/oauth-protected-resource /.well-known/oauth-protected-resource/mcp]
}

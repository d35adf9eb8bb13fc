package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/server"
)

func TestAddExtensionRefusals(t *testing.T) {
	h := func(context.Context, *server.ExtensionRequest) (any, error) { return map[string]any{}, nil }
	tests := []struct {
		name string
		exts []server.Extension
		want string
	}{
		{"no id", []server.Extension{{Methods: map[string]server.ExtensionHandler{"x/y": h}}}, "non-empty id"},
		{"tasks", []server.Extension{{ID: "io.modelcontextprotocol/tasks"}}, "the server's own"},
		{"twice", []server.Extension{{ID: "a/b"}, {ID: "a/b"}}, "added twice"},
		{"own method", []server.Extension{{ID: "a/b", Methods: map[string]server.ExtensionHandler{"tools/list": h}}}, "method tools/list is the endpoint's own"},
		{"shared method", []server.Extension{{ID: "a/b", Methods: map[string]server.ExtensionHandler{"x/y": h}}, {ID: "a/c", Methods: map[string]server.ExtensionHandler{"x/y": h}}}, "is also extension"},
		{"nil handler", []server.Extension{{ID: "a/b", Methods: map[string]server.ExtensionHandler{"x/y": nil}}}, "has no handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "x", Version: "1"})
			for _, x := range tt.exts {
				ep.AddExtension(x)
			}
			_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: server.DevAdmission()})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

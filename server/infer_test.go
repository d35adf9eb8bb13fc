package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

type sliceItem struct {
	IDs []int `json:"ids"`
}

type sliceEmbedded struct {
	Labels []string `json:"labels,omitempty"`
}

type sliceIn struct {
	sliceEmbedded
	URLs   []string            `json:"urls"`
	Tags   []string            `json:"tags,omitempty"`
	Maybe  *[]string           `json:"maybe,omitempty"`
	Items  []sliceItem         `json:"items,omitempty"`
	Matrix [][]int             `json:"matrix,omitempty"`
	ByKey  map[string][]string `json:"byKey,omitempty"`
	Pair   [2]string           `json:"pair,omitzero"`
	Hidden []string            `json:"-"`
}

type sliceOut struct {
	URLs []string `json:"urls"`
}

// TestInferredSlices: a slice is a plain "array" in an inferred input
// schema (a pointer to one stays nullable), at every depth, so that null is
// refused for it; in an output schema it stays nullable, because a nil
// slice in a result marshals as null.
func TestInferredSlices(t *testing.T) {
	tool, err := server.InferToolSchemas[sliceIn, sliceOut](&mcp.Tool{Name: "fetch"})
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for name, raw := range in.Properties {
		var p struct {
			Type  json.RawMessage `json:"type"`
			Items *struct {
				Type       json.RawMessage `json:"type"`
				Properties map[string]struct {
					Type json.RawMessage `json:"type"`
				} `json:"properties"`
			} `json:"items"`
			AdditionalProperties *struct {
				Type json.RawMessage `json:"type"`
			} `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		s := string(p.Type)
		if p.Items != nil {
			s += " of " + string(p.Items.Type)
			for k, v := range p.Items.Properties {
				s += " with " + k + " " + string(v.Type)
			}
		}
		if a := p.AdditionalProperties; a != nil && len(a.Type) > 0 {
			s += " of " + string(a.Type)
		}
		types[name] = s
	}
	want := map[string]string{
		"labels": `"array" of "string"`,
		"urls":   `"array" of "string"`,
		"tags":   `"array" of "string"`,
		"maybe":  `["null","array"] of "string"`,
		"items":  `"array" of "object" with ids "array"`,
		"matrix": `"array" of "array"`,
		"byKey":  `"object" of "array"`,
		"pair":   `"array" of "string"`,
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("input property types (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"urls"}, in.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	wantOut := json.RawMessage(`{"type":"object","required":["urls"],"properties":{"urls":{"type":["null","array"],"items":{"type":"string"}}},"additionalProperties":false}`)
	if diff := cmp.Diff(decodeJSON(t, wantOut), decodeJSON(t, tool.OutputSchema)); diff != "" {
		t.Errorf("output schema (-want +got):\n%s", diff)
	}

	// Both directions over HTTP: null is refused for an input slice, and a
	// nil output slice (null) passes the output schema: the handler returns
	// the tags, nil when the call has none.
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "main", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "fetch"}, func(_ context.Context, _ *server.Request, in sliceIn) (*mcp.CallToolResult, sliceOut, error) {
		return nil, sliceOut{URLs: in.Tags}, nil
	})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: server.DevAdmission()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := mcptest.NewClient(mcptest.Remote(hs.URL, &http.Client{Transport: tr}), "/mcp")
	for _, tc := range []struct {
		args string
		want string // "" for a result, else the start of the tool error's text
	}{
		{`{"urls":["a"]}`, ""},
		{`{"urls":[]}`, ""},
		{`{"urls":["a"],"maybe":null}`, ""},
		{`{"urls":["a"],"byKey":{"k":["v"]}}`, ""},
		{`{"urls":null}`, "Invalid arguments"},
		{`{}`, "Invalid arguments"},
		{`{"urls":["a"],"tags":null}`, "Invalid arguments"},
		{`{"urls":["a"],"labels":null}`, "Invalid arguments"},
		{`{"urls":["a"],"items":[{"ids":null}]}`, "Invalid arguments"},
		{`{"urls":["a"],"matrix":[null]}`, "Invalid arguments"},
		{`{"urls":["a"],"byKey":{"k":null}}`, "Invalid arguments"},
	} {
		resp, err := c.CallTool(t.Context(), "fetch", json.RawMessage(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		var res mcp.CallToolResult
		if err := resp.DecodeResult(&res); err != nil {
			t.Fatalf("%s: %v (body %s)", tc.args, err, resp.Body)
		}
		got := ""
		if res.IsError {
			got = "error"
			if len(res.Content) == 1 {
				if tx, ok := res.Content[0].(*mcp.TextContent); ok {
					got = tx.Text
				}
			}
		}
		if (tc.want == "" && got != "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: tool error %q, want %q", tc.args, got, tc.want)
		}
	}
	resp, err := c.CallTool(t.Context(), "fetch", json.RawMessage(`{"urls":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.Body), `"structuredContent":{"urls":null}`) || strings.Contains(string(resp.Body), `"isError":true`) {
		t.Errorf("nil output slice: %s", resp.Body)
	}
}

package client_test

import (
	"context"
	"testing"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// The project's server rejects (HTTP 400, -32020) a call whose declared
// Mcp-Param-* headers are missing or disagree with the arguments, so a
// successful call proves the client mirrored them, encoded as required.
func TestParamHeadersAcceptedByServer(t *testing.T) {
	r := newRig(t, rigOptions{})
	c := newClient(t, r.url, client.Options{})
	ctx := testContext(t)
	for _, args := range []map[string]any{
		{"region": "us-west1", "n": 42},
		{"region": " padded ", "n": 7.0},
		{"region": "Hello, 世界"},
		{"region": "=?base64?bm90?="},
		{},
	} {
		res, err := c.Call(ctx, "where", args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if res.Result == nil || res.Result.IsError {
			t.Fatalf("%v: %+v", args, res.Result)
		}
	}
}

func TestLegacySessionElicitation(t *testing.T) {
	r := newRig(t, rigOptions{versions: []string{mcp.ProtocolVersion20251125}})
	asked := 0
	c := newClient(t, r.url, client.Options{Handlers: client.Handlers{
		Elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"ok": true}}, nil
		},
	}})
	res, err := c.Call(testContext(t), "confirm", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != mcp.ProtocolVersion20251125 || asked != 1 || res.Result == nil || res.Result.IsError {
		t.Fatalf("version %q asked %d result %+v", c.ProtocolVersion(), asked, res.Result)
	}
}

package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/postgres"
)

var _ server.AnswerRelay = (*postgres.AnswerRelay)(nil)

// TestAnswerRelayTwoServers runs two server.Server nodes, each on its own
// store (pool) and relay over one PostgreSQL schema: a 2025-11-25 session
// opened on node A calls a tool that asks for an elicitation on A's POST
// stream, the client POSTs its answer to node B, and the call on A
// completes with it. Small answers travel inside the notification, large
// ones through the answers table.
func TestAnswerRelayTwoServers(t *testing.T) {
	pgURL := pgtest.URL(t)
	schema := pgtest.Schema(t, pgURL, "relaye2e_")
	nodeA, nodeB := startNode(t, pgURL, schema, "node-a"), startNode(t, pgURL, schema, "node-b")

	for _, tc := range []struct {
		name string
		note string
	}{
		{"inline answer", "small"},
		{"answer through a row", strings.Repeat("n", 20_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &legacyHTTP{t: t}
			sid := c.initialize(nodeA)
			res, body := c.post(nodeA, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm","arguments":{"target":"db"}}}`)
			defer body.Close()
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("tools/call on A: %d %s", res.StatusCode, ct)
			}
			br := bufio.NewReader(body)
			req := c.next(br)
			if req.Method != mcp.MethodElicitationCreate || len(req.ID) == 0 {
				t.Fatalf("first message on A's stream: %+v", req)
			}
			answer := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"ok":true,"note":"` + tc.note + `"}}}`
			ack, ackBody := c.post(nodeB, sid, answer)
			ackBytes, _ := io.ReadAll(ackBody)
			ackBody.Close()
			if ack.StatusCode != http.StatusAccepted {
				t.Fatalf("answer POSTed to B: %d %s", ack.StatusCode, ackBytes)
			}
			final := c.next(br)
			if final.Error != nil || !strings.Contains(string(final.Result), "deleted db with "+tc.note[:5]) {
				t.Fatalf("the call on A after the answer reached B: %.300s %+v", final.Result, final.Error)
			}
		})
	}
}

// startNode opens a store and its relay on schema and serves a server node
// with sessions in that store on loopback HTTP; it returns the endpoint's
// URL. Everything stops when the test ends.
func startNode(t *testing.T, pgURL, schema, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	st, err := postgres.Open(ctx, postgres.Options{URL: pgURL, Schema: schema, MaxConns: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	relay, err := postgres.NewAnswerRelay(ctx, st, postgres.AnswerRelayOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })

	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "relay-e2e", Version: "1.0.0"})
	type target struct {
		Target string `json:"target"`
	}
	server.AddTool(ep, &mcp.Tool{Name: "confirm", Description: "Delete a target after a confirmation."},
		func(_ context.Context, req *server.Request, in target) (*mcp.CallToolResult, any, error) {
			if req.RequestState() == nil {
				return nil, nil, server.InputRequired(mcp.InputRequests{
					"confirm": mcp.NewElicitFormRequest("Delete "+in.Target+"?",
						json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"note":{"type":"string"}},"required":["ok"]}`)),
				}, []byte("confirm"))
			}
			var a struct {
				Content struct {
					Note string `json:"note"`
				} `json:"content"`
			}
			if err := json.Unmarshal(req.InputResponses["confirm"], &a); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + in.Target + " with " + a.Content.Note}}}, nil, nil
		})
	srv, err := server.New(server.Options{
		Endpoints:   []*server.Endpoint{ep},
		Admission:   server.DevAdmission(),
		Sessions:    &server.SessionOptions{Store: st.Sessions()},
		NodeID:      id,
		AnswerRelay: relay,
		Logger:      quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// legacyHTTP is a 2025-era client over real HTTP, as user "alice".
type legacyHTTP struct{ t *testing.T }

// rpcMsg is one JSON-RPC message the client reads.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *mcp.Error      `json:"error"`
}

// post sends body to url in session sid ("" for none) and returns the
// response with its body, which the caller closes.
func (c *legacyHTTP) post(url, sid, body string) (*http.Response, io.ReadCloser) {
	c.t.Helper()
	// A stream that stops (an answer that never arrives) fails the test
	// instead of holding it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	c.t.Cleanup(cancel)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer alice")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	return res, res.Body
}

// initialize opens a session on url with the elicitation capability.
func (c *legacyHTTP) initialize(url string) string {
	c.t.Helper()
	res, body := c.post(url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"relay-e2e","version":"1"}}}`)
	b, _ := io.ReadAll(body)
	body.Close()
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || sid == "" {
		c.t.Fatalf("initialize: %d %s", res.StatusCode, b)
	}
	res, body = c.post(url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	body.Close()
	if res.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: %d", res.StatusCode)
	}
	return sid
}

// next reads the next JSON-RPC message of an SSE stream, skipping
// comments and events without data.
func (c *legacyHTTP) next(br *bufio.Reader) rpcMsg {
	c.t.Helper()
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("reading the stream: %v", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 && data != nil {
			break
		}
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = append(data, d...)
		}
	}
	var m rpcMsg
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("decoding %.200q: %v", data, err)
	}
	return m
}

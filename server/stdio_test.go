package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

func TestStdioModernRequests(t *testing.T) {
	srv := newCatalogServer(t, nil)
	rig := newStdioRig(t, srv, server.StdioOptions{})
	tests := []struct {
		name, method, params, want string
	}{
		{"discover", "server/discover", modernParams(""), `"supportedVersions"`},
		{"list", "tools/list", modernParams(""), `"name":"echo"`},
		{"call", "tools/call", modernParams(`"name":"echo","arguments":{"text":"hi"}`), `"structuredContent":{"echo":"hi"}`},
		{"unknown tool", "tools/call", modernParams(`"name":"nope"`), ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig.t = t
			m := rig.call(fmt.Sprint(i+1), tt.method, tt.params)
			if tt.want == "" {
				if m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
					t.Fatalf("got %s, want -32602", m.line)
				}
				return
			}
			if m.Error != nil || !strings.Contains(string(m.Result), tt.want) {
				t.Fatalf("got %s, want a result with %s", m.line, tt.want)
			}
		})
	}
}

func TestStdioMalformedLines(t *testing.T) {
	srv := newCatalogServer(t, nil)
	rig := newStdioRig(t, srv, server.StdioOptions{MaxLineBytes: 1024})
	tests := []struct {
		name, line string
		wantCode   int64
		wantID     string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,`, mcp.CodeParseError, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, mcp.CodeInvalidRequest, "null"},
		{"no version", `{"id":2,"method":"tools/list","params":` + modernParams("") + `}`, mcp.CodeInvalidRequest, "2"},
		{"no _meta, no initialize", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, mcp.CodeInvalidParams, "3"},
		{"unsupported version", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, mcp.CodeUnsupportedProtocolVersion, "4"},
		{"over the line limit", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 4000) + `"}}}`, mcp.CodeInvalidRequest, "null"},
		{"too deep", strings.Repeat("[", 200) + strings.Repeat("]", 200), mcp.CodeParseError, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig.t = t
			rig.send(tt.line)
			m := rig.recv()
			if m.Error == nil || m.Error.Code != tt.wantCode || string(m.ID) != tt.wantID {
				t.Fatalf("got %s, want error %d with id %s", m.line, tt.wantCode, tt.wantID)
			}
			// The stream goes on.
			if p := rig.call(`"after"`, "server/discover", modernParams("")); p.Error != nil {
				t.Fatalf("ping after the bad line: %s", p.line)
			}
		})
	}
}

// gateTools registers "gate", which waits for its key to be released (or
// its context to end, which it reports on canceled), and counts calls in
// flight on started.
type gateTools struct {
	mu       sync.Mutex
	gates    map[string]chan struct{}
	started  chan string
	canceled chan string
}

func newGateTools(ep *server.Endpoint) *gateTools {
	g := &gateTools{gates: map[string]chan struct{}{}, started: make(chan string, 256), canceled: make(chan string, 256)}
	server.AddTool(ep, &mcp.Tool{Name: "gate"}, func(ctx context.Context, req *server.Request, in EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
		ch := g.gate(in.Text)
		g.started <- in.Text
		select {
		case <-ch:
			return nil, EchoOutput{Echo: in.Text}, nil
		case <-ctx.Done():
			g.canceled <- in.Text
			return nil, EchoOutput{}, ctx.Err()
		}
	})
	return g
}

func (g *gateTools) gate(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := g.gates[key]
	if ch == nil {
		ch = make(chan struct{})
		g.gates[key] = ch
	}
	return ch
}

func (g *gateTools) release(key string) { close(g.gate(key)) }

func stdioWait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatal("timed out")
	}
	var zero T
	return zero
}

func TestStdioConcurrentRequests(t *testing.T) {
	var g *gateTools
	srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) { g = newGateTools(ep) })
	rig := newStdioRig(t, srv, server.StdioOptions{})
	const n = 32
	for i := range n {
		rig.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i, modernParams(fmt.Sprintf(`"name":"gate","arguments":{"text":"k%d"}`, i))))
	}
	for range n { // all n run at once
		stdioWait(t, g.started)
	}
	// Released in reverse: the responses come in that order, each with
	// its own id and result.
	var got, want []string
	for i := n - 1; i >= 0; i-- {
		g.release(fmt.Sprintf("k%d", i))
		m := rig.recv()
		var res struct {
			Structured EchoOutput `json:"structuredContent"`
		}
		json.Unmarshal(m.Result, &res)
		got = append(got, string(m.ID)+"="+res.Structured.Echo)
		want = append(want, fmt.Sprintf("%d=k%d", i, i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
}

func TestStdioCancelOneRequest(t *testing.T) {
	for _, era := range []string{"modern", "2025"} {
		t.Run(era, func(t *testing.T) {
			var g *gateTools
			srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) { g = newGateTools(ep) })
			rig := newStdioRig(t, srv, server.StdioOptions{})
			params := func(key string) string {
				return modernParams(`"name":"gate","arguments":{"text":"` + key + `"}`)
			}
			if era == "2025" {
				if m := rig.call("0", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`); m.Error != nil {
					t.Fatalf("initialize: %s", m.line)
				}
				rig.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				params = func(key string) string { return `{"name":"gate","arguments":{"text":"` + key + `"}}` }
			}
			rig.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":` + params("a") + `}`)
			rig.send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":` + params("b") + `}`)
			stdioWait(t, g.started)
			stdioWait(t, g.started)
			rig.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"user"}}`)
			if got := stdioWait(t, g.canceled); got != "a" {
				t.Fatalf("canceled %q, want a", got)
			}
			g.release("b")
			if m := rig.recv(); string(m.ID) != `"b"` || m.Error != nil {
				t.Fatalf("got %s, want b's result (nothing for a)", m.line)
			}
			// Nothing was sent for a: the next message is this ping's.
			method, pp := "server/discover", modernParams("")
			if era == "2025" {
				method, pp = "ping", `{}`
			}
			if m := rig.call(`"p"`, method, pp); m.Error != nil {
				t.Fatalf("ping: %s", m.line)
			}
		})
	}
}

func TestStdioProgressAndLogs(t *testing.T) {
	srv := newCatalogServer(t, nil)
	rig := newStdioRig(t, srv, server.StdioOptions{})
	rig.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"pt"},"name":"progress"}}`)
	var methods []string
	for {
		m := rig.recv()
		if m.Method == "" {
			if string(m.ID) != "1" || m.Error != nil {
				t.Fatalf("final %s", m.line)
			}
			break
		}
		methods = append(methods, m.Method)
		if !strings.Contains(string(m.Params), `"progressToken":"pt"`) {
			t.Errorf("progress without its token: %s", m.line)
		}
	}
	if diff := cmp.Diff([]string{"notifications/progress", "notifications/progress"}, methods); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

// TestStdioLogNotifications: a handler's log messages reach a modern
// client that asked for them in _meta, and a 2025 session, which gets
// every level until logging/setLevel, as notifications/message before the
// result.
func TestStdioLogNotifications(t *testing.T) {
	srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "logs"}, func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			if err := req.Log(ctx, mcp.LevelInfo, "build", "step one"); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: textContent("logged")}, nil, nil
		})
	})
	for _, era := range []string{"modern", "2025"} {
		t.Run(era, func(t *testing.T) {
			rig := newStdioRig(t, srv, server.StdioOptions{})
			params := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"},"name":"logs"}`
			if era == "2025" {
				stdioInitialize(t, rig, "2025-11-25", `{}`)
				params = `{"name":"logs"}`
			}
			rig.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)
			if m := rig.recv(); m.Method != mcp.NotificationMessage || !strings.Contains(string(m.Params), `"data":"step one"`) {
				t.Fatalf("got %s, want the log message", m.line)
			}
			if m := rig.recv(); string(m.ID) != "1" || m.Error != nil {
				t.Fatalf("got %s, want the result", m.line)
			}
		})
	}
}

// TestStdioOutputCarriesOnlyMessages: a handler panic makes the server log
// (with a stack); the log goes to the logger, and every line of the output
// is a JSON-RPC message.
func TestStdioOutputCarriesOnlyMessages(t *testing.T) {
	var logs syncBuffer
	srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	rig := newStdioRig(t, srv, server.StdioOptions{})
	m := rig.call("1", "tools/call", modernParams(`"name":"panics"`))
	if m.Error == nil || m.Error.Code != mcp.CodeInternalError || m.Error.Message != "Internal error" {
		t.Fatalf("got %s, want the fixed internal error", m.line)
	}
	rig.call("2", "tools/call", modernParams(`"name":"fail"`))
	rig.send("garbage")
	rig.recv()
	if !strings.Contains(logs.String(), "handler panicked") {
		t.Fatalf("the panic was not logged: %q", logs.String())
	}
	rig.in.Close()
	for line := range rig.lines { // what is left, up to the end of the output
		parseStdioLine(t, line)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestStdioEOFDrains: the client closes its input with a call running; the
// call's response is still written, then ServeStdio returns nil.
func TestStdioEOFDrains(t *testing.T) {
	var g *gateTools
	srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) { g = newGateTools(ep) })
	rig := newStdioRig(t, srv, server.StdioOptions{})
	rig.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + modernParams(`"name":"gate","arguments":{"text":"slow"}`) + `}`)
	stdioWait(t, g.started)
	rig.in.Close()
	g.release("slow")
	if m := rig.recv(); string(m.ID) != "7" || m.Error != nil {
		t.Fatalf("got %s, want the drained response", m.line)
	}
	if err := stdioWait(t, rig.done); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	rig.done <- nil // for the cleanup
}

func TestStdioOptionsValidated(t *testing.T) {
	srv := newCatalogServer(t, nil)
	tests := []struct {
		name string
		opts server.StdioOptions
	}{
		{"negative line limit", server.StdioOptions{MaxLineBytes: -1}},
		{"unknown endpoint", server.StdioOptions{Endpoint: "/nope"}},
		{"identity without tenant", server.StdioOptions{Identity: &server.Identity{Principal: "me"}}},
		{"huge queue", server.StdioOptions{WriteQueue: 1 << 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := srv.ServeStdio(context.Background(), strings.NewReader(""), &bytes.Buffer{}, tt.opts); err == nil {
				t.Fatal("ServeStdio accepted invalid options")
			}
		})
	}
}

// TestStdioLongLinesShareTheBodyBudget: lines beyond the free allowance
// charge Options.MaxBufferedBodyBytes while their requests run, and give it
// back when they end.
func TestStdioLongLinesShareTheBodyBudget(t *testing.T) {
	var g *gateTools
	srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) {
		g = newGateTools(ep)
		o.MaxBodyBytes, o.MaxBufferedBodyBytes = 8<<10, 8<<10
	})
	rig := newStdioRig(t, srv, server.StdioOptions{})
	long := func(id, key string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` +
			modernParams(`"name":"gate","arguments":{"text":"`+key+strings.Repeat(" ", 6000)+`"}`) + `}`
	}
	rig.send(long("1", "a"))
	held := stdioWait(t, g.started)
	rig.send(long("2", "b"))
	if m := rig.recv(); m.Error == nil || m.Error.Code != mcp.CodeInternalError || !strings.Contains(m.Error.Message, "busy") {
		t.Fatalf("got %s, want busy while the first line is held", m.line)
	}
	g.release(held)
	if m := rig.recv(); string(m.ID) != "1" || m.Error != nil {
		t.Fatalf("got %s, want the first call's result", m.line)
	}
	// The refund follows the response: the line is held until the
	// request's goroutine has ended, just after it answered. A busy answer
	// in that window is retried; the budget must come back.
	g.release("c" + strings.Repeat(" ", 6000))
	for {
		rig.send(long("3", "c"))
		m := rig.recv()
		if m.Error != nil && strings.Contains(m.Error.Message, "busy") {
			continue
		}
		if string(m.ID) != "3" || m.Error != nil {
			t.Fatalf("got %s, want the third call's result (the budget was given back)", m.line)
		}
		break
	}
}

// failingWriter fails every write, as a stdout whose reader has gone.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestStdioOutputFailureEnds: when the output fails (the host closed its
// end), ServeStdio ends with the write error although its input is still
// open.
func TestStdioOutputFailureEnds(t *testing.T) {
	srv := newCatalogServer(t, nil)
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), inR, failingWriter{}, server.StdioOptions{}) }()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":`+modernParams("")+"}\n"); err != nil {
		t.Fatal(err)
	}
	err := stdioWait(t, done)
	if err == nil || !strings.Contains(err.Error(), "stdio output") {
		t.Fatalf("ServeStdio = %v, want the output's error", err)
	}
}

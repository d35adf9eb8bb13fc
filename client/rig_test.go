package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	sessmemory "github.com/taskwire/taskwire/session/memory"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type reportIn struct {
	Region string `json:"region" jsonschema:"the region"`
}

type reportOut struct {
	Rows int `json:"rows"`
}

// rig is a real taskwire server on loopback: an inline tool "add", a
// task tool "report" (tasks in a memory manager the test drives like a
// worker) and a tool "confirm" that asks for a form first.
type rig struct {
	mem *memory.Manager
	srv *httptest.Server
	url string
	o   rigOptions
}

type rigOptions struct {
	listen       bool
	versions     []string
	pollInterval time.Duration
}

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	pi := o.pollInterval
	if pi == 0 {
		pi = 20 * time.Millisecond
	}
	mem, err := memory.New(memory.Options{PollInterval: pi})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{mem: mem, o: o}
	srv := httptest.NewServer(r.newServer(t))
	t.Cleanup(srv.Close)
	r.srv, r.url = srv, srv.URL+"/mcp"
	return r
}

// newServer returns a taskwire server with the rig's tools over the rig's
// task manager; a second one over the same manager is a restart (its
// 2025-era sessions are new: each server has its own session store).
func (r *rig) newServer(t *testing.T) *server.Server {
	t.Helper()
	o, mem := r.o, r.mem
	// Tasks need a 2026 revision on the endpoint; a 2025-only rig has none.
	var taskVersions []string
	if o.versions == nil || slices.Contains(o.versions, mcp.LatestProtocolVersion) {
		taskVersions = []string{mcp.LatestProtocolVersion}
	}
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "rig", Version: "1.0.0",
		ProtocolVersions:     o.versions,
		TaskProtocolVersions: taskVersions,
	})
	server.AddTool[addIn, addOut](ep, &mcp.Tool{Name: "add", Description: "Adds."},
		func(_ context.Context, _ *server.Request, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	if taskVersions != nil {
		server.AddTaskTool[reportIn, reportOut](ep, &mcp.Tool{Name: "report", Description: "Builds a report."},
			func(_ context.Context, _ *server.Request, _ reportIn, cc *task.CreationContext) (task.Handle, error) {
				tk, err := mem.Create(cc)
				return task.Handle{ID: tk.ID()}, err
			}, server.WithTaskInput(task.InputElicitationForm))
	}
	server.AddTool[map[string]any, addOut](ep, &mcp.Tool{Name: "confirm", Description: "Asks first."},
		func(_ context.Context, req *server.Request, _ map[string]any) (*mcp.CallToolResult, addOut, error) {
			ans, ok := req.InputResponses["ok"]
			if !ok {
				return nil, addOut{}, server.InputRequired(mcp.InputRequests{"ok": formRequest()}, []byte("round-1"))
			}
			if string(req.RequestState()) != "round-1" || !strings.Contains(string(ans), `"accept"`) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad retry"}}}, addOut{}, nil
			}
			return nil, addOut{Sum: 1}, nil
		})
	server.AddTool[map[string]any, addOut](ep, &mcp.Tool{Name: "where", Description: "Routes by region.",
		InputSchema: []byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`)},
		func(_ context.Context, _ *server.Request, in map[string]any) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: len(in)}, nil
		})
	server.AddTool[map[string]any, addOut](ep, &mcp.Tool{Name: "steps", Description: "Reports progress."},
		func(ctx context.Context, req *server.Request, _ map[string]any) (*mcp.CallToolResult, addOut, error) {
			for i := 1; i <= 3; i++ {
				if err := req.ReportProgress(ctx, float64(i), 3, fmt.Sprintf("step %d", i)); err != nil {
					return nil, addOut{}, err
				}
			}
			return nil, addOut{Sum: 3}, nil
		})
	// Each server keeps its own sessions, in process, so that a restarted
	// one knows none (the task manager would keep them across servers).
	sessions, err := sessmemory.New(sessmemory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: mem, Sessions: &server.SessionOptions{Store: sessions}}
	if o.listen {
		opts.Subscriptions = &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)}
	}
	h, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func formRequest() *mcp.InputRequest {
	return mcp.NewElicitFormRequest("Proceed?", []byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
}

// counter is an http.RoundTripper that records the Mcp-Method (or HTTP
// method) of every request with its time.
type counter struct {
	mu    sync.Mutex
	seen  []string
	times []time.Time
	next  http.RoundTripper
	// answered, when set, receives the method of every answered request.
	answered chan string
}

func newCounter() *counter { return &counter{next: http.DefaultTransport.(*http.Transport).Clone()} }

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	m := r.Header.Get("Mcp-Method")
	if m == "" {
		m = r.Method
	}
	c.mu.Lock()
	c.seen = append(c.seen, m)
	c.times = append(c.times, time.Now())
	c.mu.Unlock()
	resp, err := c.next.RoundTrip(r)
	if c.answered != nil {
		select {
		case c.answered <- m:
		default:
		}
	}
	return resp, err
}

func (c *counter) methods() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

func (c *counter) timesOf(method string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for i, m := range c.seen {
		if m == method {
			out = append(out, c.times[i])
		}
	}
	return out
}

func newClient(t *testing.T, url string, o client.Options) *client.Client {
	t.Helper()
	c, err := client.New(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startReport calls the task tool and returns its result, which must be a
// task.
func startReport(t *testing.T, c *client.Client) *client.CallResult {
	t.Helper()
	res, err := c.Call(testContext(t), "report", map[string]string{"region": "eu"})
	if err != nil || res.Task == nil {
		t.Fatalf("call: %v %+v", err, res)
	}
	return res
}

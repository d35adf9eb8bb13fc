package interop

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

// mcpGoTaskServer is an mcp-go v1.2.1 server with the 2025-11-25 tasks:
// its slow.build has execution.taskSupport "optional", so that a call
// with params.task runs as an mcp-go task. Each call is counted and held
// until release is closed. mcp-go v1.2.1 runs a task under a context
// derived from the tools/call request that created it, which ends once
// the CreateTaskResult is sent (HandleMessage's deferred cancel): the
// handler cannot watch its context, so it ignores it, and a task that
// mcp-go cancels (tasks/cancel) is reported to stopped by a task hook.
type mcpGoTaskServer struct {
	url     string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	stopped chan error
	calls   atomic.Int64
	// polled receives when a tasks/get arrives: the gateway has recorded
	// the task and follows it.
	polled chan struct{}
	// mcp is the mcp-go server's handler; restart replaces it.
	mcp atomic.Pointer[http.Handler]
	// deletes counts the DELETEs (session ends) the server received.
	deletes atomic.Int64
}

func newMCPGoTaskServer(t *testing.T) *mcpGoTaskServer {
	u := &mcpGoTaskServer{held: make(chan struct{}, 4), release: make(chan struct{}), stopped: make(chan error, 4), polled: make(chan struct{}, 1)}
	u.restart()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if bytes.Contains(body, []byte(`"method":"tasks/get"`)) {
			select {
			case u.polled <- struct{}{}:
			default:
			}
		}
		if r.Method == http.MethodDelete {
			u.deletes.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		(*u.mcp.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.releaseAll()
		srv.Close()
	})
	u.url = srv.URL + "/mcp"
	return u
}

// restart replaces the mcp-go server with a new one behind the same
// address, as a restarted process would be: it knows no session and no
// task. Calls held in the old one stay held until releaseAll.
func (u *mcpGoTaskServer) restart() {
	s := mcpGoSlowBuildServer("peer-mcpgo-tasks", func() { u.stopped <- context.Canceled },
		func(context.Context, mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
			call := int(u.calls.Add(1))
			u.held <- struct{}{}
			<-u.release
			return mcpgomcp.NewToolResultStructured(map[string]int{"call": call}, `{"call":`+itoa(call)+`}`), nil
		})
	var h http.Handler = mcpgoserver.NewStreamableHTTPServer(s)
	u.mcp.Store(&h)
}

// mcpGoSlowBuildServer is an mcp-go server named name with the 2025-11-25
// tasks and one tool, slow.build (execution.taskSupport "optional"),
// answered by handler; cancelled is called for each task mcp-go cancels.
func mcpGoSlowBuildServer(name string, cancelled func(), handler mcpgoserver.ToolHandlerFunc) *mcpgoserver.MCPServer {
	hooks := &mcpgoserver.TaskHooks{}
	hooks.AddOnTaskCancelled(func(context.Context, mcpgoserver.TaskMetrics) { cancelled() })
	s := mcpgoserver.NewMCPServer(name, "1.0.0",
		mcpgoserver.WithToolCapabilities(false), mcpgoserver.WithTaskCapabilities(true, true, true),
		mcpgoserver.WithTaskHooks(hooks))
	s.AddTool(mcpgomcp.NewTool("slow.build", mcpgomcp.WithDescription("Build slowly."),
		mcpgomcp.WithTaskSupport(mcpgomcp.TaskSupportOptional),
		mcpgomcp.WithNumber("steps", mcpgomcp.Description("how many steps"))), handler)
	return s
}

func (u *mcpGoTaskServer) releaseAll() { u.once.Do(func() { close(u.release) }) }

// awaitFollowed waits until the tool was called and the gateway polls
// its task.
func (u *mcpGoTaskServer) awaitFollowed(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, c := range []chan struct{}{u.held, u.polled} {
		select {
		case <-c:
		case <-ctx.Done():
			t.Fatal("the mcp-go upstream was not called, or its task not followed")
		}
	}
}

// gatewayNodeOn serves g from a node on the SQLite file db; stop shuts the
// node down (releasing its runs) and leaves g open.
func gatewayNodeOn(t *testing.T, ctx context.Context, g *gateway.Gateway, db string) (url string, stop func()) {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "gateway", Version: "1.0.0"})
	var tools durable.Set
	if err := g.Register(ep, &tools); err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: db}},
		Endpoint:      ep,
		Tools:         &tools,
		Workers:       2,
		PollInterval:  20 * time.Millisecond,
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := n.Shutdown(); err != nil {
				t.Errorf("node Shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return n.URL(), stop
}

func newMCPGoGateway(t *testing.T, ctx context.Context, upstream string) *gateway.Gateway {
	t.Helper()
	g, err := gateway.New(ctx, gateway.Options{
		Upstream: upstream, TaskTools: []string{"slow.*"}, RetryTools: []string{"slow.*"},
		ProtocolVersions: []string{mcp.ProtocolVersion20251125},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	return g
}

// TestGatewayMCPGoUpstreamTasks puts package gateway in front of an mcp-go
// server with 2025-11-25 tasks, which mcp-go binds to the session that
// created them. A task tool's run creates an mcp-go task (params.task)
// and follows it to its result; a node stopped while it follows the task
// and started again on the same store with the same gateway (so, the same
// upstream session) follows the same task: the upstream tool is called
// once, though the tool is a retry tool. A new gateway on the same store,
// after the first one was closed (as a restarted process is), resumes the
// recorded session and follows the task too, with no second call; when
// the upstream itself restarted and forgot the session, the run fails
// saying so and does not call again. Cancelling the downstream task
// cancels the mcp-go task.
func TestGatewayMCPGoUpstreamTasks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	t.Run("resumed in the same session", func(t *testing.T) {
		up := newMCPGoTaskServer(t)
		g := newMCPGoGateway(t, ctx, up.url)
		db := filepath.Join(t.TempDir(), "gateway.db")
		url, stop := gatewayNodeOn(t, ctx, g, db)
		res, err := gatewayClient(t, url, nil).Call(ctx, "slow.build", map[string]int{"steps": 1})
		if err != nil || res.Task == nil {
			t.Fatalf("slow.build: %+v %v, want a task", res, err)
		}
		up.awaitFollowed(t, ctx)
		stop()
		url2, _ := gatewayNodeOn(t, ctx, g, db)
		up.releaseAll()
		out, err := gatewayClient(t, url2, nil).Task(res.Task.ID()).Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(`{"call":1}`, string(out.StructuredContent)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if n := up.calls.Load(); n != 1 {
			t.Errorf("the mcp-go tool was called %d times, want once", n)
		}
		select {
		case err := <-up.stopped:
			t.Errorf("the mcp-go task was stopped: %v", err)
		default:
		}
	})

	// startThenStop makes a task on a gateway node, waits until the
	// gateway follows it, then stops the node and closes the gateway, as
	// a graceful shutdown does; it returns the downstream task's ID.
	startThenStop := func(t *testing.T, up *mcpGoTaskServer, db string) string {
		g1, err := gateway.New(ctx, gateway.Options{
			Upstream: up.url, TaskTools: []string{"slow.*"}, RetryTools: []string{"slow.*"},
			ProtocolVersions: []string{mcp.ProtocolVersion20251125},
		})
		if err != nil {
			t.Fatal(err)
		}
		url, stop := gatewayNodeOn(t, ctx, g1, db)
		res, err := gatewayClient(t, url, nil).Call(ctx, "slow.build", map[string]int{"steps": 1})
		if err != nil || res.Task == nil {
			t.Fatalf("slow.build: %+v %v, want a task", res, err)
		}
		up.awaitFollowed(t, ctx)
		stop()
		if err := g1.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
		return res.Task.ID()
	}

	t.Run("a new gateway resumes the session", func(t *testing.T) {
		up := newMCPGoTaskServer(t)
		db := filepath.Join(t.TempDir(), "gateway.db")
		id := startThenStop(t, up, db)
		// The pass-through client ended its session; the task client
		// kept the task's.
		if n := up.deletes.Load(); n != 1 {
			t.Errorf("the closed gateway sent %d DELETEs, want 1 (the pass-through session only)", n)
		}
		g2 := newMCPGoGateway(t, ctx, up.url)
		url2, _ := gatewayNodeOn(t, ctx, g2, db)
		up.releaseAll()
		out, err := gatewayClient(t, url2, nil).Task(id).Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(`{"call":1}`, string(out.StructuredContent)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if n := up.calls.Load(); n != 1 {
			t.Errorf("the mcp-go tool was called %d times, want once", n)
		}
		select {
		case err := <-up.stopped:
			t.Errorf("the mcp-go task was stopped: %v", err)
		default:
		}
	})

	t.Run("the upstream forgot the session", func(t *testing.T) {
		up := newMCPGoTaskServer(t)
		db := filepath.Join(t.TempDir(), "gateway.db")
		id := startThenStop(t, up, db)
		up.restart()
		g2 := newMCPGoGateway(t, ctx, up.url)
		url2, _ := gatewayNodeOn(t, ctx, g2, db)
		_, err := gatewayClient(t, url2, nil).Task(id).Wait(ctx)
		var failed *client.TaskFailedError
		if !errors.As(err, &failed) || !strings.Contains(failed.Err.Message, "no longer knows the task") {
			t.Errorf("Wait: %v, want a failure saying the upstream no longer knows the task", err)
		}
		if n := up.calls.Load(); n != 1 {
			t.Errorf("the mcp-go tool was called %d times, want once", n)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		up := newMCPGoTaskServer(t)
		g := newMCPGoGateway(t, ctx, up.url)
		url, _ := gatewayNodeOn(t, ctx, g, filepath.Join(t.TempDir(), "gateway.db"))
		c := gatewayClient(t, url, nil)
		res, err := c.Call(ctx, "slow.build", map[string]int{"steps": 1})
		if err != nil || res.Task == nil {
			t.Fatalf("slow.build: %+v %v, want a task", res, err)
		}
		up.awaitFollowed(t, ctx)
		if err := res.Task.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-up.stopped:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the mcp-go task stopped with %v, want a cancellation", err)
			}
		case <-ctx.Done():
			t.Fatal("the mcp-go task was not cancelled")
		}
		if _, err := res.Task.Wait(ctx); !errors.Is(err, client.ErrTaskCancelled) {
			t.Errorf("downstream Wait: %v, want the task cancelled", err)
		}
	})
}

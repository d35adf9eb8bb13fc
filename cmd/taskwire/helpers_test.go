package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/store"
)

// waitFor bounds every wait of these tests.
const waitFor = 30 * time.Second

// newClient returns an mcptest client for the node at url (…/mcp) that
// declares the Tasks extension and form elicitation.
func newClient(t *testing.T, url string) *mcptest.Client {
	t.Helper()
	base, path, ok := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	if !ok {
		t.Fatalf("unexpected URL %q", url)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := mcptest.NewClient(mcptest.Remote("http://"+base, &http.Client{Transport: tr, Timeout: waitFor}), "/"+path)
	c.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}
	c.DeclareTasks()
	return c
}

// testConfig is a node configuration for tests: loopback on a free port,
// the SQLite file db, fast polling and a short shutdown grace. start adds
// the demo endpoint and tools.
func testConfig(db string, workers int) node.Config {
	return node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: db}},
		Workers:       workers,
		ShutdownGrace: 200 * time.Millisecond,
		PollInterval:  20 * time.Millisecond,
	}
}

// withDemo returns cfg with what taskwire serve adds to it (program): the
// demo endpoint, its subscriptions, and the durable demo tools writing
// beside the store unless cfg has tools already.
func withDemo(cfg node.Config) node.Config {
	p := program()
	cfg.Name, cfg.Version, cfg.Subscriptions = p.Name, p.Version, p.Subscriptions
	cfg.Endpoint = demoEndpoint()
	if cfg.Tools == nil {
		cfg.Tools = durableTools(defaultReportsDir(cfg.StoreSpec))
	}
	return cfg
}

// startNode starts the node cfg describes, as taskwire serve does.
func startNode(ctx context.Context, cfg node.Config) (*node.Node, error) {
	n, err := node.New(withDemo(cfg))
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// runNode runs the node cfg describes as taskwire's cmd command does,
// with its messages on stdout.
func runNode(ctx context.Context, cfg node.Config, cmd string, stdout io.Writer) error {
	cfg.Messages = stdout
	n, err := node.New(withDemo(cfg))
	if err == nil {
		err = n.Run(ctx)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// start starts a node and shuts it down when the test ends.
func start(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	n, err := startNode(ctx, cfg)
	if err != nil {
		t.Fatalf("startNode: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return n
}

// callTool calls a tool and fails the test on a transport or protocol
// error.
func callTool(t *testing.T, c *mcptest.Client, name string, args any) *mcptest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	r, err := c.CallTool(ctx, name, args)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if r.Error != nil {
		t.Fatalf("tools/call %s: HTTP %d, error %v", name, r.Status, r.Error)
	}
	return r
}

// createTask calls a task tool and returns the ID of the task it created
// (or, with an idempotency key, found).
func createTask(t *testing.T, c *mcptest.Client, name string, args any) string {
	t.Helper()
	h, err := callTool(t, c, name, args).TaskHandle()
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if h.TaskID == "" {
		t.Fatal("task handle without an ID")
	}
	// A fast job may already have finished: the handle is a snapshot.
	return h.TaskID
}

// getTask sends tasks/get.
func getTask(t *testing.T, c *mcptest.Client, id string) *mcp.GetTaskResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	r, err := c.GetTask(ctx, id)
	if err != nil {
		t.Fatalf("tasks/get: %v", err)
	}
	if r.Error != nil {
		t.Fatalf("tasks/get: HTTP %d, error %v", r.Status, r.Error)
	}
	g, err := r.Task()
	if err != nil {
		t.Fatalf("tasks/get: %v", err)
	}
	return g
}

// waitStatus polls tasks/get until the task reaches want, failing on
// another terminal status or after waitFor.
func waitStatus(t *testing.T, c *mcptest.Client, id string, want mcp.TaskStatus) *mcp.GetTaskResult {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		g := getTask(t, c, id)
		switch g.Status {
		case want:
			return g
		case mcp.TaskCompleted, mcp.TaskFailed, mcp.TaskCancelled:
			t.Fatalf("task ended %q (error %v), want %q", g.Status, g.Error, want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %q after %v, want %q", g.Status, waitFor, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// structured decodes the structuredContent of a completed task's result.
func structured[T any](t *testing.T, g *mcp.GetTaskResult) T {
	t.Helper()
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(g.Result, &res); err != nil {
		t.Fatalf("result: %v", err)
	}
	if res.IsError {
		t.Fatalf("result is an error: %s", g.Result)
	}
	var v T
	if err := json.Unmarshal(res.StructuredContent, &v); err != nil {
		t.Fatalf("structuredContent %s: %v", res.StructuredContent, err)
	}
	return v
}

// toolErrorText returns the text of an isError tool result, failing when
// the result is not one.
func toolErrorText(t *testing.T, r *mcptest.Response) string {
	t.Helper()
	var res mcp.CallToolResult
	if err := r.DecodeResult(&res); err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("want one isError text, got %s", r.Result)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("want text content, got %T", res.Content[0])
	}
	return tc.Text
}

// syncBuffer is a bytes.Buffer safe for concurrent writers, for logs and
// command output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bufferLogger returns a debug-level logger writing to a buffer.
func bufferLogger() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// reportFiles lists the names in a reports directory, temporary files
// included.
func reportFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// The operator token's variable and the bound of --admin-token-file, as
// the node command line documents them.
const (
	adminTokenEnv = "TASKWIRE_ADMIN_TOKEN"
	maxTokenFile  = 4096
	storeEnv      = "TASKWIRE_STORE"
)

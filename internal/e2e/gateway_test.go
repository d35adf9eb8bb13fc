package e2e

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpclient "github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// heldUpstream is an MCP server whose tools once.build (not safe to
// retry) and again.build (a retry tool) hold their first call until the
// connection ends, and answer later calls at once with the call's number.
type heldUpstream struct {
	url   string
	held  chan string // a first call is under way
	calls map[string]*atomic.Int64
}

type buildCall struct {
	Call int64 `json:"call"`
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	u := &heldUpstream{held: make(chan string, 4), calls: map[string]*atomic.Int64{}}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	for _, name := range []string{"once.build", "again.build"} {
		n := &atomic.Int64{}
		u.calls[name] = n
		server.AddTool(ep, &mcp.Tool{Name: name}, func(ctx context.Context, _ *server.Request, _ struct{}) (*mcp.CallToolResult, buildCall, error) {
			call := n.Add(1)
			if call == 1 {
				u.held <- name
				<-ctx.Done() // until the gateway dies
				return nil, buildCall{}, ctx.Err()
			}
			return nil, buildCall{Call: call}, nil
		})
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	u.url = hs.URL + "/mcp"
	return u
}

// TestGatewayCrashMidCall SIGKILLs `taskwire gateway` while its workers
// wait for two upstream calls, and restarts it on the same SQLite file.
// The retry tool's task completes with a second upstream call; the other
// tool's task fails saying the call was interrupted and not repeated, and
// its upstream tool is called no more.
func TestGatewayCrashMidCall(t *testing.T) {
	up := newHeldUpstream(t)
	db := filepath.Join(t.TempDir(), "gateway.db")
	args := []string{"gateway", "--upstream", up.url, "--task-tools", "*.build", "--retry-tools", "again.*",
		"--addr", "127.0.0.1:0", "--store", "sqlite:" + db, "--workers", "2", "--lease", "1s",
		"--log-level", "warn", "--shutdown-grace", "1s"}
	first := launchProc(t, "gateway#1", args...)
	first.awaitServing()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	token := func(context.Context) (string, error) { return "alice", nil }
	c1, err := mcpclient.New(first.url, mcpclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	ids := map[string]string{}
	for _, name := range []string{"once.build", "again.build"} {
		res, err := c1.Call(ctx, name, nil)
		if err != nil || res.Task == nil {
			t.Fatalf("%s: %+v %v, want a task", name, res, err)
		}
		ids[name] = res.Task.ID()
	}
	for range 2 {
		select {
		case <-up.held:
		case <-ctx.Done():
			t.Fatalf("the upstream was not called:\n%s", first.output())
		}
	}
	first.kill()

	second := launchProc(t, "gateway#2", args...)
	second.awaitServing()
	c2, err := mcpclient.New(second.url, mcpclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()

	out, err := c2.Task(ids["again.build"]).Wait(ctx)
	if err != nil {
		t.Fatalf("again.build: %v\n%s", err, second.output())
	}
	if diff := cmp.Diff(`{"call":2}`, string(out.StructuredContent)); diff != "" {
		t.Errorf("again.build result (-want +got):\n%s", diff)
	}
	_, err = c2.Task(ids["once.build"]).Wait(ctx)
	var failed *mcpclient.TaskFailedError
	if !errors.As(err, &failed) || failed.Err == nil || !strings.Contains(failed.Err.Message, "interrupted") ||
		!strings.Contains(failed.Err.Message, "not repeated") {
		t.Errorf("once.build: %v, want a failure saying the call was interrupted and not repeated", err)
	}
	if got := map[string]int64{"once.build": up.calls["once.build"].Load(), "again.build": up.calls["again.build"].Load()}; !cmp.Equal(got,
		map[string]int64{"once.build": 1, "again.build": 2}) {
		t.Errorf("upstream calls = %v, want once.build 1 and again.build 2", got)
	}
}

package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpclient "github.com/taskwire/taskwire/client"
)

// TestGatewayFleetWorkerKilled runs a gateway fleet on PostgreSQL: an API
// node (`taskwire gateway --workers 0`) and a separate worker (`taskwire
// gateway worker`). The worker is SIGKILLed while it waits for two
// upstream calls; another worker takes the jobs. The retry tool's task
// completes with a second upstream call; the other tool's task fails
// saying the call was interrupted and not repeated, and its upstream tool
// is called no more.
func TestGatewayFleetWorkerKilled(t *testing.T) {
	pgURL := sharedPostgres(t)
	schema := newSchema(t, pgURL)
	up := newHeldUpstream(t)
	upstreamFlags := []string{"--upstream", up.url, "--task-tools", "*.build", "--retry-tools", "again.*"}
	common := []string{"--store", pgURL, "--schema", schema, "--lease", "1s", "--log-level", "warn", "--shutdown-grace", "1s"}
	api := launchProc(t, "gateway-api", append(append([]string{"gateway", "--addr", "127.0.0.1:0", "--workers", "0"}, upstreamFlags...), common...)...)
	api.awaitServing()
	worker := func(name string) *proc {
		return launchProc(t, name, append(append([]string{"gateway", "worker", "--workers", "2"}, upstreamFlags...), common...)...)
	}
	w1 := worker("gateway-worker#1")

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := mcpclient.New(api.url, mcpclient.Options{Token: func(context.Context) (string, error) { return "alice", nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := map[string]string{}
	for _, name := range []string{"once.build", "again.build"} {
		res, err := c.Call(ctx, name, nil)
		if err != nil || res.Task == nil {
			t.Fatalf("%s: %+v %v, want a task", name, res, err)
		}
		ids[name] = res.Task.ID()
	}
	for range 2 {
		select {
		case <-up.held:
		case <-ctx.Done():
			t.Fatalf("the upstream was not called:\n%s", w1.output())
		}
	}
	w1.kill()
	w2 := worker("gateway-worker#2")

	out, err := c.Task(ids["again.build"]).Wait(ctx)
	if err != nil {
		t.Fatalf("again.build: %v\n%s", err, w2.output())
	}
	if diff := cmp.Diff(`{"call":2}`, string(out.StructuredContent)); diff != "" {
		t.Errorf("again.build result (-want +got):\n%s", diff)
	}
	_, err = c.Task(ids["once.build"]).Wait(ctx)
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

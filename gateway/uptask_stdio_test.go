package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// AskIn and AskOut are the input and output of the stdio task upstream's
// ask.task.
type AskIn struct {
	Who string `json:"who"`
}

type AskOut struct {
	Who  string `json:"who"`
	Note string `json:"note"`
}

// serveStdioTaskUpstream serves, over stdio, a taskwire node whose tools
// are durable (a 2025-11-25 session gets them as task-required tools with
// tasks of their own), on the SQLite file dir/upstream.db, or a new file
// for each process once dir/fresh exists (an upstream that forgot its
// tasks). Each process counts its start in dir/starts and each tools/call
// it reads in dir/tools-call:
//   - slow.task: "step i of n" progress; after step HoldAt it waits for
//     dir/release, and exits the process when it finds dir/die (which it
//     removes); a cancellation is written to dir/stopped. Its result is
//     {"steps":n,"call":k}, k the tools/call requests counted so far;
//   - ask.task: asks "Approve <who>?" (an elicitation form) and returns
//     who and the answer's note.
func serveStdioTaskUpstream(dir string) int {
	countCall(dir, "starts")
	db := filepath.Join(dir, "upstream.db")
	if _, err := os.Stat(filepath.Join(dir, "fresh")); err == nil {
		db = filepath.Join(dir, fmt.Sprintf("fresh-%d.db", os.Getpid()))
	}
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	var tools durable.Set
	durable.Add(&tools, durable.Tool[BuildIn, BuildOut]{
		Tool: &mcp.Tool{Name: "slow.task", Description: "Build in steps."},
		Run: func(ctx context.Context, job *worker.Job, in BuildIn) (BuildOut, error) {
			for i := 1; i <= in.Steps; i++ {
				_ = job.ReportProgress(fmt.Sprintf("step %d of %d", i, in.Steps), float64(i), float64(in.Steps))
				for i == in.HoldAt && !exists("release") {
					if exists("die") {
						_ = os.Remove(filepath.Join(dir, "die"))
						os.Exit(5)
					}
					select {
					case <-ctx.Done():
						_ = os.WriteFile(filepath.Join(dir, "stopped"), []byte(context.Cause(ctx).Error()), 0o600)
						return BuildOut{}, context.Cause(ctx)
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			return BuildOut{Steps: in.Steps, Call: callsIn(dir, "tools-call")}, nil
		},
		TaskOptions: durable.TaskOptions{PollInterval: 50 * time.Millisecond},
	})
	durable.Add(&tools, durable.Tool[AskIn, AskOut]{
		Tool: &mcp.Tool{Name: "ask.task"},
		Run: func(ctx context.Context, job *worker.Job, in AskIn) (AskOut, error) {
			raw, err := job.Ask(ctx, "approve", mcp.NewElicitFormRequest("Approve "+in.Who+"?",
				[]byte(`{"type":"object","properties":{"note":{"type":"string"}},"required":["note"]}`)))
			if err != nil {
				return AskOut{}, err
			}
			var er mcp.ElicitResult
			if err := json.Unmarshal(raw, &er); err != nil {
				return AskOut{}, err
			}
			note, _ := er.Content["note"].(string)
			return AskOut{Who: in.Who, Note: note}, nil
		},
		TaskOptions: durable.TaskOptions{PollInterval: 50 * time.Millisecond, TaskInput: []string{task.InputElicitationForm}},
	})
	n, err := node.New(node.Config{
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: db}},
		Tools:         &tools,
		Workers:       4,
		PollInterval:  20 * time.Millisecond,
		Lease:         node.MinLease,
		ShutdownGrace: 200 * time.Millisecond,
		Stdio:         &node.Stdio{In: countingInput(os.Stdin, dir), Out: os.Stdout},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := n.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// countingInput passes in on, counting each tools/call request in
// dir/tools-call.
func countingInput(in io.Reader, dir string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadBytes('\n')
			if bytes.Contains(line, []byte(`"method":"tools/call"`)) {
				countCall(dir, "tools-call")
			}
			if _, werr := pw.Write(line); werr != nil || err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// callsIn is calls without a *testing.T, for the upstream process.
func callsIn(dir, name string) int {
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// stdioTaskOptions are gateway options whose upstream is this test binary
// serving serveStdioTaskUpstream, in a new directory (returned).
func stdioTaskOptions(t *testing.T, opts gateway.Options) (gateway.Options, string) {
	t.Helper()
	opts, dir := stdioOptions(t, opts)
	opts.UpstreamEnv = append(os.Environ(), "GATEWAY_TEST_SERVER=stdio-tasks", "GATEWAY_TEST_DIR="+dir)
	return opts, dir
}

// touch creates the file dir/name.
func touch(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// heldStdioTask starts a gateway node with opts (of stdioTaskOptions) on
// the SQLite file db and calls slow.task, held after its first step; it
// returns the node and the downstream task once its statusMessage says
// the upstream task reached the hold.
func heldStdioTask(t *testing.T, ctx context.Context, opts gateway.Options, db string) (*gatewayNode, *client.Task) {
	t.Helper()
	gw := startGatewayOn(t, opts, db)
	task := callTask(t, ctx, newClient(t, gw.url), "slow.task", BuildIn{Steps: 2, HoldAt: 1})
	awaitStatus(t, ctx, task, "step 1 of 2")
	return gw, task
}

// wantCompleted waits for task and checks it completed with the result of
// the upstream's first tools/call, and that no other call was made.
func wantCompleted(t *testing.T, ctx context.Context, task *client.Task, dir string) {
	t.Helper()
	out, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(BuildOut{Steps: 2, Call: 1}, structured[BuildOut](t, out)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if n := calls(t, dir, "tools-call"); n != 1 {
		t.Errorf("the upstream got %d tools/call, want 1", n)
	}
}

// TestStdioUpstreamTask: a task tool whose stdio upstream offers
// 2025-11-25 tasks runs as an upstream task: the downstream task's
// statusMessage follows the upstream task's, its result is the upstream's
// structured result, and the upstream is called once.
func TestStdioUpstreamTask(t *testing.T) { stdioEras(t, testStdioUpstreamTask) }

func testStdioUpstreamTask(t *testing.T, versions []string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	opts, dir := stdioTaskOptions(t, gateway.Options{TaskTools: []string{"*.task"}, ProtocolVersions: versions})
	_, task := heldStdioTask(t, ctx, opts, filepath.Join(t.TempDir(), "gateway.db"))
	touch(t, dir, "release")
	wantCompleted(t, ctx, task, dir)
}

// TestStdioUpstreamTaskCancelled: cancelling the downstream task cancels
// the upstream task (tasks/cancel on the process's stdio).
func TestStdioUpstreamTaskCancelled(t *testing.T) { stdioEras(t, testStdioUpstreamTaskCancelled) }

func testStdioUpstreamTaskCancelled(t *testing.T, versions []string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	opts, dir := stdioTaskOptions(t, gateway.Options{TaskTools: []string{"*.task"}, ProtocolVersions: versions})
	_, task := heldStdioTask(t, ctx, opts, filepath.Join(t.TempDir(), "gateway.db"))
	if err := task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := task.Wait(ctx); !errors.Is(err, client.ErrTaskCancelled) {
		t.Errorf("downstream Wait: %v, want the task cancelled", err)
	}
	eventually(t, func() string {
		b, err := os.ReadFile(filepath.Join(dir, "stopped"))
		if err != nil || !strings.Contains(string(b), worker.ErrCancelRequested.Error()) {
			return fmt.Sprintf("the upstream task was not cancelled (%q, %v)", b, err)
		}
		return ""
	})
}

// TestStdioUpstreamTaskRestarts: the run of a task tool follows its
// upstream task across restarts, calling the upstream once: when the
// gateway is stopped and started again on the same store (a new process),
// and when the upstream process dies mid-task and the gateway restarts it,
// the new process knows the task (its store is durable) and the run
// follows it to its result. When the restarted process does not know the
// task, the run fails saying so and does not call again, though the tool
// is safe to retry.
func TestStdioUpstreamTaskRestarts(t *testing.T) { stdioEras(t, testStdioUpstreamTaskRestarts) }

func testStdioUpstreamTaskRestarts(t *testing.T, versions []string) {
	opts := gateway.Options{TaskTools: []string{"*.task"}, RetryTools: []string{"*.task"}, ProtocolVersions: versions}
	t.Run("gateway restarted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		db := filepath.Join(t.TempDir(), "gateway.db")
		opts, dir := stdioTaskOptions(t, opts)
		first, task := heldStdioTask(t, ctx, opts, db)
		first.stop(t)
		second := startGatewayOn(t, opts, db)
		touch(t, dir, "release")
		wantCompleted(t, ctx, newClient(t, second.url).Task(task.ID()), dir)
		if n := calls(t, dir, "starts"); n != 2 {
			t.Errorf("%d upstream processes, want 2", n)
		}
	})
	t.Run("upstream died, knows the task", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		opts, dir := stdioTaskOptions(t, opts)
		_, task := heldStdioTask(t, ctx, opts, filepath.Join(t.TempDir(), "gateway.db"))
		touch(t, dir, "die")
		eventually(t, func() string {
			if calls(t, dir, "starts") < 2 {
				return "the upstream process was not restarted"
			}
			return ""
		})
		touch(t, dir, "release")
		wantCompleted(t, ctx, task, dir)
	})
	t.Run("upstream died, forgot the task", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		opts, dir := stdioTaskOptions(t, opts)
		_, task := heldStdioTask(t, ctx, opts, filepath.Join(t.TempDir(), "gateway.db"))
		touch(t, dir, "fresh")
		touch(t, dir, "die")
		_, err := task.Wait(ctx)
		var failed *client.TaskFailedError
		if !errors.As(err, &failed) || !strings.Contains(failed.Err.Message, "no longer knows the task") {
			t.Errorf("Wait: %v, want a failure saying the upstream no longer knows the task", err)
		}
		if n := calls(t, dir, "tools-call"); n != 1 {
			t.Errorf("the upstream got %d tools/call, want 1", n)
		}
	})
}

// TestStdioUpstreamTaskInputRouted: two upstream tasks ask for input at
// once on the same process; each request names its task (the
// related-task _meta key) and becomes the input round of the downstream
// task whose run follows that task, and each answer goes back to the
// upstream task that asked.
func TestStdioUpstreamTaskInputRouted(t *testing.T) {
	opts, dir := stdioTaskOptions(t, gateway.Options{TaskTools: []string{"*.task"}})
	gw := startGatewayOn(t, opts, filepath.Join(t.TempDir(), "gateway.db"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	// Each task has a client of its own, whose handler checks that it is
	// asked its own task's question; neither answers before both were
	// asked, so that both upstream tasks wait for input at once.
	whos := []string{"alice", "bob"}
	var arrived sync.WaitGroup
	arrived.Add(len(whos))
	bothAsked := make(chan struct{})
	go func() { arrived.Wait(); close(bothAsked) }()
	tasks := map[string]*client.Task{}
	for _, who := range whos {
		var once sync.Once
		c, err := client.New(gw.url, client.Options{
			Token: func(context.Context) (string, error) { return "alice", nil },
			Handlers: client.Handlers{Elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				if p.Message != "Approve "+who+"?" {
					t.Errorf("the task of %s was asked %q", who, p.Message)
				}
				once.Do(arrived.Done)
				select {
				case <-bothAsked:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"note": "for " + who}}, nil
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		res, err := c.Call(ctx, "ask.task", AskIn{Who: who})
		if err != nil || res.Task == nil {
			t.Fatalf("ask.task: %+v %v, want a task", res, err)
		}
		tasks[who] = res.Task
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = map[string]AskOut{}
	)
	for who, task := range tasks {
		wg.Go(func() {
			out, err := task.Wait(ctx)
			if err != nil {
				t.Errorf("%s: %v", who, err)
				return
			}
			var got AskOut
			if err := json.Unmarshal(out.StructuredContent, &got); err != nil {
				t.Errorf("%s: %s: %v", who, out.StructuredContent, err)
			}
			mu.Lock()
			results[who] = got
			mu.Unlock()
		})
	}
	wg.Wait()
	want := map[string]AskOut{"alice": {Who: "alice", Note: "for alice"}, "bob": {Who: "bob", Note: "for bob"}}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if n := calls(t, dir, "tools-call"); n != 2 {
		t.Errorf("the upstream got %d tools/call, want 2", n)
	}
}

// TestStdioUpstreamInputAmbiguous: a 2025-era upstream's input request
// that names no task, sent while two calls are in flight on its process,
// cannot be tied to either: the gateway refuses it (asks no client), and
// the task whose call then fails says why.
func TestStdioUpstreamInputAmbiguous(t *testing.T) {
	opts, dir := stdioOptions(t, gateway.Options{TaskTools: []string{"slow.*", "ask.*"}, RetryTools: []string{"slow.*", "ask.*"}})
	gw := startGatewayOn(t, opts, filepath.Join(t.TempDir(), "gateway.db"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := newClient(t, gw.url)
	held := callTask(t, ctx, c, "slow.build", BuildIn{Steps: 2, HoldAt: 1})
	awaitStatus(t, ctx, held, "step 1 of 2")
	res, err := c.Call(ctx, "ask.deploy", map[string]any{})
	if err != nil || res.Task == nil {
		t.Fatalf("ask.deploy: %+v %v, want a task", res, err)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil || !out.IsError || !strings.Contains(resultText(out), "cannot tell which call") {
		t.Errorf("ask.deploy: %+v %v, want an isError result saying the request could not be tied to its call", out, err)
	}
	touch(t, dir, "release")
	if _, err := held.Wait(ctx); err != nil {
		t.Errorf("slow.build: %v", err)
	}
}

// TestStdioUpstreamSerialCalls: with SerialCalls, the call that would
// have been ambiguous (TestStdioUpstreamInputAmbiguous) waits for the one
// in flight, and its process's input request, naming no task, is relayed
// to its client: the task completes approved.
func TestStdioUpstreamSerialCalls(t *testing.T) {
	opts, dir := stdioOptions(t, gateway.Options{TaskTools: []string{"slow.*", "ask.*"}, RetryTools: []string{"slow.*", "ask.*"},
		SerialCalls: true, MaxAttempts: 1}) // a refused request would fail the one run
	gw := startGatewayOn(t, opts, filepath.Join(t.TempDir(), "gateway.db"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var asked atomic.Int64
	c := approvingClient(t, gw.url, &asked)
	held := callTask(t, ctx, c, "slow.build", BuildIn{Steps: 2, HoldAt: 1})
	awaitStatus(t, ctx, held, "step 1 of 2")
	res, err := c.Call(ctx, "ask.deploy", map[string]any{})
	if err != nil || res.Task == nil {
		t.Fatalf("ask.deploy: %+v %v, want a task", res, err)
	}
	touch(t, dir, "release")
	if _, err := held.Wait(ctx); err != nil {
		t.Errorf("slow.build: %v", err)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil || out.IsError {
		t.Fatalf("ask.deploy: %+v %v, want its result", out, err)
	}
	if got := structured[DeployOut](t, out); !got.Approved {
		t.Errorf("result %+v, want approved", got)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the client was asked %d times, want 1", n)
	}
}

// TestStdioUpstreamTaskRequiredPassThrough: with task tools, the stdio
// session declares tasks, so the upstream's durable tools are
// task-required to it; a call of one that is not a task tool of the
// gateway passes through inline all the same: the gateway makes the
// upstream task and waits for its result.
func TestStdioUpstreamTaskRequiredPassThrough(t *testing.T) {
	opts, dir := stdioTaskOptions(t, gateway.Options{TaskTools: []string{"ask.*"}})
	gw := startGatewayOn(t, opts, filepath.Join(t.TempDir(), "gateway.db"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := newClient(t, gw.url).Call(ctx, "slow.task", BuildIn{Steps: 2})
	if err != nil || res.Task != nil {
		t.Fatalf("slow.task: %+v %v, want an inline result", res, err)
	}
	if diff := cmp.Diff(BuildOut{Steps: 2, Call: 1}, structured[BuildOut](t, res.Result)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if n := calls(t, dir, "tools-call"); n != 1 {
		t.Errorf("the upstream got %d tools/call, want 1", n)
	}
}

// TestStdioUpstreamTaskByToolSettings: a tool made a task tool by its
// Options.Tools entry alone (no TaskTools pattern) runs as an upstream
// task too.
func TestStdioUpstreamTaskByToolSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	opts, dir := stdioTaskOptions(t, gateway.Options{Tools: []gateway.ToolSettings{{Match: "slow.task", Task: new(true)}}})
	_, task := heldStdioTask(t, ctx, opts, filepath.Join(t.TempDir(), "gateway.db"))
	touch(t, dir, "release")
	wantCompleted(t, ctx, task, dir)
}

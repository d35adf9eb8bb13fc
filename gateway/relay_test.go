package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
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
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// DeployOut is the result of the asking upstream's deploy tools.
type DeployOut struct {
	Approved bool `json:"approved"`
	Call     int  `json:"call"`
}

// newAskingUpstream serves ask.deploy and once.deploy, which ask their
// caller to approve before answering (a 2026-07-28 input round, or
// elicitation/create on the call's stream in a 2025-era session), and
// counts their calls.
func newAskingUpstream(t *testing.T) (url string, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "asking", Version: "1.0.0"})
	deploy := askingDeploy(calls)
	server.AddTool(ep, &mcp.Tool{Name: "ask.deploy"}, deploy)
	server.AddTool(ep, &mcp.Tool{Name: "once.deploy"}, deploy)
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return hs.URL + "/mcp", calls
}

// askingDeploy is the handler of the asking upstreams' deploy tools: it
// asks for approval (an input round) and answers with the approval and
// its count of calls.
func askingDeploy(calls *atomic.Int64) server.ToolHandlerFor[struct{}, DeployOut] {
	return func(_ context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, DeployOut, error) {
		n := int(calls.Add(1))
		ans, ok := req.InputResponses["approve"]
		if !ok {
			form := mcp.NewElicitFormRequest("Deploy to production?",
				[]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
			return nil, DeployOut{}, server.InputRequired(mcp.InputRequests{"approve": form}, []byte("round-1"))
		}
		var er mcp.ElicitResult
		if err := json.Unmarshal(ans, &er); err != nil {
			return nil, DeployOut{}, err
		}
		return nil, DeployOut{Approved: er.Action == mcp.ElicitActionAccept && er.Content["ok"] == true, Call: n}, nil
	}
}

// TestUpstreamInputBecomesAnInputRound: an upstream's request for input
// during a task run of a retry tool becomes the downstream task's input
// round; the client's answer reaches the upstream on the next call. A
// tool not safe to retry is not relayed: its task says why. Both for a
// 2026-07-28 upstream (input_required rounds) and a 2025-11-25 one
// (elicitation/create on the call's stream).
func TestUpstreamInputBecomesAnInputRound(t *testing.T) {
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			upURL, calls := newAskingUpstream(t)
			url := startGateway(t, gateway.Options{
				Upstream:         upURL,
				ProtocolVersions: []string{version},
				TaskTools:        []string{"*.deploy"},
				RetryTools:       []string{"ask.deploy"},
			})
			var asked atomic.Int64
			c := approvingClient(t, url, &asked)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()

			res, err := c.Call(ctx, "ask.deploy", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Task == nil {
				t.Fatalf("ask.deploy answered inline: %+v", res.Result)
			}
			out, err := res.Task.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The upstream's handler ran three times: the first run's call
			// asked (1); the run after the answer called again, was asked
			// again (2) and answered with the client's answer, which the
			// upstream's handler then got (3: the round's second request
			// in 2026-07-28, the handler resumed after elicitation/create
			// in 2025-11-25).
			const wantCall = 3
			if diff := cmp.Diff(DeployOut{Approved: true, Call: wantCall}, structured[DeployOut](t, out)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the client was asked %d times, want 1", n)
			}

			before := calls.Load()
			res, err = c.Call(ctx, "once.deploy", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			out, err = res.Task.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !out.IsError || !strings.Contains(resultText(out), "relays only for tools marked safe to retry") {
				t.Errorf("once.deploy: %+v, want an isError result saying input is relayed only for retry tools", out)
			}
			if n := calls.Load() - before; n != 1 {
				t.Errorf("once.deploy called the upstream %d times, want 1", n)
			}
		})
	}
}

// TestUpstreamTaskInputRelayed: an upstream task that asks for input
// (input_required with its requests in tasks/get) becomes the downstream
// task's input round; the client's answer goes to the upstream task with
// tasks/update, and the task completes with one upstream task for it, for
// a tool not marked safe to retry too: nothing is called again. Under
// 2025-11-25 the upstream sends its request on the stream of tasks/result
// instead, and the gateway answers it there.
func TestUpstreamTaskInputRelayed(t *testing.T) {
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) { testUpstreamTaskInputRelayed(t, version) })
	}
}

func testUpstreamTaskInputRelayed(t *testing.T, version string) {
	var (
		mu    sync.Mutex
		tasks = map[string]bool{} // upstream task IDs its handler ran for
	)
	var tools durable.Set
	durable.Add(&tools, durable.Tool[struct{}, DeployOut]{
		Tool: &mcp.Tool{Name: "approve.task", Description: "Asks, then deploys."},
		Run: func(ctx context.Context, job *worker.Job, _ struct{}) (DeployOut, error) {
			mu.Lock()
			tasks[job.TaskID()] = true
			mu.Unlock()
			raw, err := job.Ask(ctx, "approve", mcp.NewElicitFormRequest("Deploy to production?",
				[]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)))
			if err != nil {
				return DeployOut{}, err
			}
			var er mcp.ElicitResult
			if err := json.Unmarshal(raw, &er); err != nil {
				return DeployOut{}, err
			}
			return DeployOut{Approved: er.Action == mcp.ElicitActionAccept && er.Content["ok"] == true, Call: job.InputRounds()}, nil
		},
		TaskOptions: durable.TaskOptions{PollInterval: 50 * time.Millisecond, TaskInput: []string{task.InputElicitationForm}},
	})
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	up, err := node.New(node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: filepath.Join(t.TempDir(), "upstream.db")}},
		Endpoint:      ep,
		Tools:         &tools,
		Workers:       2,
		PollInterval:  20 * time.Millisecond,
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := up.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Shutdown() })

	url := startGateway(t, gateway.Options{Upstream: up.URL(), ProtocolVersions: []string{version}, TaskTools: []string{"*.task"}})
	var asked atomic.Int64
	c := approvingClient(t, url, &asked)
	res, err := c.Call(ctx, "approve.task", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil {
		t.Fatalf("approve.task answered inline: %+v", res.Result)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := structured[DeployOut](t, out); !got.Approved {
		t.Errorf("result %+v, want approved", got)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the client was asked %d times, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tasks) != 1 {
		t.Errorf("the upstream ran %d tasks, want 1: the gateway called it again", len(tasks))
	}
}

// TestStdioUpstreamInputRelayed: a stdio upstream's elicitation/create
// during the only call in flight, of a retry tool, is relayed as the
// task's input round; the next run's call gets the client's answer.
func TestStdioUpstreamInputRelayed(t *testing.T) { stdioEras(t, testStdioUpstreamInputRelayed) }

func testStdioUpstreamInputRelayed(t *testing.T, versions []string) {
	opts, dir := stdioOptions(t, gateway.Options{TaskTools: []string{"ask.deploy"}, RetryTools: []string{"ask.deploy"}, ProtocolVersions: versions})
	url := startGateway(t, opts)
	var asked atomic.Int64
	c := approvingClient(t, url, &asked)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := c.Call(ctx, "ask.deploy", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil {
		t.Fatalf("ask.deploy answered inline: %+v", res.Result)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := structured[DeployOut](t, out); !got.Approved {
		t.Errorf("result %+v, want approved", got)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the client was asked %d times, want 1", n)
	}
	if n := calls(t, dir, "ask.deploy"); n < 2 {
		t.Errorf("ask.deploy ran %d times, want the asking call and the answered one", n)
	}
}

// TestInlineInputRelayed: a call passed through inline whose 2026-07-28
// upstream asks for input gets an input round of its own: the gateway's
// client answers it (a 2026-07-28 client in its next request, a 2025-11-25
// one on its session's stream) and the upstream, called again, gets the
// answer. A 2025-era upstream's request is relayed on the open call
// (held_test.go).
func TestInlineInputRelayed(t *testing.T) {
	upURL, _ := newAskingUpstream(t)
	url := startGateway(t, gateway.Options{Upstream: upURL})
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125} {
		t.Run("client "+version, func(t *testing.T) {
			var asked atomic.Int64
			c := approvingClient(t, url, &asked, version)
			res, err := c.Call(t.Context(), "ask.deploy", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if got := structured[DeployOut](t, res.Result); !got.Approved {
				t.Errorf("result %+v, want approved", got)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the client was asked %d times, want 1", n)
			}
		})
	}
}

// approvingClient is a client of url (negotiating versions; nil: the
// newest) whose user approves the deployment every asking tool asks
// about, counting the questions in asked.
func approvingClient(t *testing.T, url string, asked *atomic.Int64, versions ...string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.Options{
		ProtocolVersions: versions,
		Token:            func(context.Context) (string, error) { return "alice", nil },
		Handlers: client.Handlers{Elicit: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if p.Message != "Deploy to production?" {
				t.Errorf("the client was asked %q", p.Message)
			}
			return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"ok": true}}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestUpstreamInputRoundsConcurrent: several task runs whose 2026-07-28
// upstream calls answer input_required at once each get their own input
// round (the round is tied to its call by construction), and each call
// made again with its answer completes: nothing is refused for the other
// calls in flight.
func TestUpstreamInputRoundsConcurrent(t *testing.T) {
	const n = 3
	upURL, _ := newAskingUpstream(t)
	url := startGateway(t, gateway.Options{Upstream: upURL, TaskTools: []string{"ask.deploy"}, RetryTools: []string{"ask.deploy"}})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	// No client answers before every task asked: all input rounds are
	// pending at once.
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var wg sync.WaitGroup
	for range n {
		var once sync.Once
		c, err := client.New(url, client.Options{
			Token: func(context.Context) (string, error) { return "alice", nil },
			Handlers: client.Handlers{Elicit: func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				once.Do(arrived.Done)
				select {
				case <-all:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"ok": true}}, nil
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		res, err := c.Call(ctx, "ask.deploy", map[string]any{})
		if err != nil || res.Task == nil {
			t.Fatalf("ask.deploy: %+v %v, want a task", res, err)
		}
		wg.Go(func() {
			out, err := res.Task.Wait(ctx)
			if err != nil {
				t.Errorf("Wait: %v", err)
				return
			}
			var got DeployOut
			if err := json.Unmarshal(out.StructuredContent, &got); err != nil || !got.Approved {
				t.Errorf("result %s (%v), want approved", out.StructuredContent, err)
			}
		})
	}
	wg.Wait()
}

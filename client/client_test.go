package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"go.uber.org/goleak"
)

func TestInlineCall(t *testing.T) {
	r := newRig(t, rigOptions{})
	c := newClient(t, r.url, client.Options{})
	ctx := testContext(t)
	res, err := c.Call(ctx, "add", map[string]int{"a": 2, "b": 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task != nil || res.Result == nil {
		t.Fatalf("want an inline result, got %+v", res)
	}
	if got := string(res.Result.StructuredContent); got != `{"sum":5}` {
		t.Fatalf("structuredContent = %s", got)
	}
	if c.ProtocolVersion() != mcp.LatestProtocolVersion || c.ServerInfo() == nil || c.ServerInfo().Name != "rig" {
		t.Fatalf("version %q, server info %+v", c.ProtocolVersion(), c.ServerInfo())
	}
}

func TestWaitListensThenGetsOnce(t *testing.T) {
	r := newRig(t, rigOptions{listen: true})
	cnt := newCounter()
	cnt.answered = make(chan string, 16)
	c := newClient(t, r.url, client.Options{Transport: cnt})
	ctx := testContext(t)
	res := startReport(t, c)
	done := make(chan error, 1)
	var out *mcp.CallToolResult
	go func() {
		var err error
		out, err = res.Task.Wait(ctx)
		done <- err
	}()
	for m := range cnt.answered {
		if m == mcp.MethodTasksGet {
			break
		}
	}
	if _, err := r.mem.Complete(res.Task.ID(), &mcp.CallToolResult{StructuredContent: []byte(`{"rows":3}`)}, "done"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if string(out.StructuredContent) != `{"rows":3}` {
		t.Fatalf("result %s", out.StructuredContent)
	}
	got := cnt.methods()
	i := slices.Index(got, mcp.MethodSubscriptionsListen)
	if i < 0 {
		t.Fatalf("no listen in %v", got)
	}
	if diff := cmp.Diff([]string{mcp.MethodSubscriptionsListen, mcp.MethodTasksGet}, got[i:]); diff != "" {
		t.Fatalf("requests after listen (-want +got):\n%s", diff)
	}
}

func TestWaitPollsAtPollInterval(t *testing.T) {
	const interval = 60 * time.Millisecond
	r := newRig(t, rigOptions{pollInterval: interval}) // no subscriptions: listen is refused
	cnt := newCounter()
	cnt.answered = make(chan string, 64)
	c := newClient(t, r.url, client.Options{Transport: cnt})
	ctx := testContext(t)
	res := startReport(t, c)
	done := make(chan error, 1)
	go func() { _, err := res.Task.Wait(ctx); done <- err }()
	gets := 0
	for m := range cnt.answered {
		if m == mcp.MethodTasksGet {
			if gets++; gets == 4 {
				break
			}
		}
	}
	r.mem.Fail(res.Task.ID(), &mcp.Error{Code: -32603, Message: "boom", Data: json.RawMessage(`{"k":1}`)}, "failed")
	err := <-done
	var tf *client.TaskFailedError
	if !errors.As(err, &tf) || tf.Err.Code != -32603 || tf.Err.Message != "boom" || string(tf.Err.Data) != `{"k":1}` {
		t.Fatalf("err = %#v", err)
	}
	times := cnt.timesOf(mcp.MethodTasksGet)
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < interval {
			t.Fatalf("poll %d came %v after the previous one, faster than %v", i, gap, interval)
		}
	}
}

func TestInputRequiredRoundAnsweredByHandler(t *testing.T) {
	r := newRig(t, rigOptions{})
	var asked []string
	c := newClient(t, r.url, client.Options{Handlers: client.Handlers{
		Elicit: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked = append(asked, p.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"ok": true}}, nil
		},
	}})
	ctx := testContext(t)
	res, err := c.Call(ctx, "confirm", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Result == nil || res.Result.IsError || string(res.Result.StructuredContent) != `{"sum":1}` {
		t.Fatalf("result %+v", res.Result)
	}
	if diff := cmp.Diff([]string{"Proceed?"}, asked); diff != "" {
		t.Fatal(diff)
	}
}

func TestInputRequiredWithoutHandler(t *testing.T) {
	r := newRig(t, rigOptions{})
	c := newClient(t, r.url, client.Options{})
	_, err := c.Call(testContext(t), "confirm", map[string]any{})
	var rpc *client.RPCError
	// Without an elicitation capability the server refuses with -32021.
	if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapability || rpc.MissingCapabilities() == nil {
		t.Fatalf("err = %v", err)
	}
}

func TestTaskInputAndRebuiltHandle(t *testing.T) {
	r := newRig(t, rigOptions{listen: true})
	c1 := newClient(t, r.url, client.Options{})
	ctx := testContext(t)
	res := startReport(t, c1)
	id := res.Task.ID()
	if _, err := r.mem.RequestInput(id, mcp.InputRequests{"go": formRequest()}, "need input"); err != nil {
		t.Fatal(err)
	}
	// A second client that declares form elicitation without a handler:
	// Wait reports the pending keys for the caller to answer.
	c2 := newClient(t, r.url, client.Options{Handlers: client.Handlers{
		Declare: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: mcp.Object{}}},
	}})
	_, err := c2.Task(id).Wait(ctx)
	var ir *client.InputRequiredError
	if !errors.As(err, &ir) || !slices.Equal(ir.Keys, []string{"go"}) {
		t.Fatalf("err = %v", err)
	}
	h := c2.Task(id)
	if err := h.Answer(ctx, mcp.InputResponses{"go": json.RawMessage(`{"action":"accept","content":{"ok":true}}`)}); err != nil {
		t.Fatal(err)
	}
	if err := h.Answer(ctx, mcp.InputResponses{"go": json.RawMessage(`{"action":"accept"}`)}); !errors.Is(err, client.ErrAlreadyAnswered) {
		t.Fatalf("second answer: %v", err)
	}
	got, err := r.mem.TakeInputResponses(id)
	if err != nil || len(got) != 1 {
		t.Fatalf("responses %v %v", got, err)
	}
	r.mem.Complete(id, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no rows"}}}, "done")
	out, err := h.Wait(ctx)
	if err != nil || !out.IsError {
		t.Fatalf("isError result must complete normally: %v %+v", err, out)
	}
	if _, err := c2.Task("no-such-task").Get(ctx); !errors.Is(err, client.ErrTaskNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestCancelledTask(t *testing.T) {
	r := newRig(t, rigOptions{})
	c := newClient(t, r.url, client.Options{})
	ctx := testContext(t)
	res := startReport(t, c)
	if err := res.Task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	r.mem.Cancel(res.Task.ID(), "stopped")
	var updates []mcp.TaskStatus
	for u, err := range res.Task.Updates(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		updates = append(updates, u.Status)
	}
	if diff := cmp.Diff([]mcp.TaskStatus{mcp.TaskCancelled}, updates); diff != "" {
		t.Fatal(diff)
	}
	if _, err := res.Task.Wait(ctx); !errors.Is(err, client.ErrTaskCancelled) {
		t.Fatalf("wait: %v", err)
	}
}

func TestLegacyFallback(t *testing.T) {
	r := newRig(t, rigOptions{versions: []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125}})
	cnt := newCounter()
	c, err := client.New(r.url, client.Options{Transport: cnt})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	res, err := c.Call(ctx, "add", map[string]int{"a": 1, "b": 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Result.StructuredContent) != `{"sum":2}` || c.ProtocolVersion() != mcp.ProtocolVersion20251125 {
		t.Fatalf("version %q result %+v", c.ProtocolVersion(), res.Result)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := cnt.methods()
	if !slices.Contains(got, "DELETE") || !slices.Contains(got, "POST") {
		t.Fatalf("requests %v", got)
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	r := newRig(t, rigOptions{versions: []string{mcp.ProtocolVersion20251125}})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, err := client.New(r.url, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(testContext(t)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.ListTools(testContext(t)); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestOptionsValidated(t *testing.T) {
	for name, tc := range map[string]struct {
		url  string
		opts client.Options
	}{
		"relative url":    {"/mcp", client.Options{}},
		"ftp":             {"ftp://h/mcp", client.Options{}},
		"negative limit":  {"http://h/mcp", client.Options{MaxResultBytes: -1}},
		"owned header":    {"http://h/mcp", client.Options{Header: map[string][]string{"Mcp-Method": {"x"}}}},
		"notif > result":  {"http://h/mcp", client.Options{MaxResultBytes: 10, MaxNotificationBytes: 20}},
		"url w/o elicit":  {"http://h/mcp", client.Options{Handlers: client.Handlers{ElicitURL: true}}},
		"client timeout":  {"http://h/mcp", client.Options{HTTPClient: &http.Client{Timeout: time.Second}}},
		"both transports": {"http://h/mcp", client.Options{HTTPClient: &http.Client{}, Transport: http.DefaultTransport}},
		"negative close":  {"http://h/mcp", client.Options{CloseTimeout: -time.Second}},
		"userinfo":        {"http://u:secret@h/mcp", client.Options{}},
		"user only":       {"http://token@h/mcp", client.Options{}},
		// net/http would refuse each of these on every request.
		"header name with space": {"http://h/mcp", client.Options{Header: map[string][]string{"X Team": {"a"}}}},
		"header value with LF":   {"http://h/mcp", client.Options{Header: map[string][]string{"X-Team": {"a\nInjected: b"}}}},
		"header value with NUL":  {"http://h/mcp", client.Options{Header: map[string][]string{"X-Team": {"a\x00"}}}},
	} {
		if _, err := client.New(tc.url, tc.opts); err == nil {
			t.Errorf("%s: New accepted invalid options", name)
		}
	}
	c, err := client.New("http://h/mcp", client.Options{Header: map[string][]string{"X-Team_1.ok": {"a\tb c"}}})
	if err != nil {
		t.Fatalf("New refused a valid header: %v", err)
	}
	c.Close()
}

func TestLegacyTaskFlow(t *testing.T) {
	r := newRig(t, rigOptions{}) // every revision; Tasks under 2026-07-28
	c := newClient(t, r.url, client.Options{ProtocolVersions: []string{mcp.ProtocolVersion20251125}})
	ctx := testContext(t)
	res := startReport(t, c) // task-required: sent with params.task
	if c.ProtocolVersion() != mcp.ProtocolVersion20251125 {
		t.Fatalf("version %q", c.ProtocolVersion())
	}
	d, err := res.Task.Get(ctx)
	if err != nil || d.Status != mcp.TaskWorking {
		t.Fatalf("get: %v %+v", err, d)
	}
	r.mem.Complete(res.Task.ID(), &mcp.CallToolResult{StructuredContent: []byte(`{"rows":9}`)}, "done")
	out, err := res.Task.Wait(ctx) // tasks/result
	if err != nil || string(out.StructuredContent) != `{"rows":9}` {
		t.Fatalf("wait: %v %+v", err, out)
	}
	if err := res.Task.Answer(ctx, mcp.InputResponses{"k": []byte(`{}`)}); !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("answer in a session: %v", err)
	}
}

func TestWaitAnswersTaskInputWithHandler(t *testing.T) {
	r := newRig(t, rigOptions{listen: true})
	cnt := newCounter()
	cnt.answered = make(chan string, 16)
	asked := make(chan string, 4)
	c := newClient(t, r.url, client.Options{Transport: cnt, Handlers: client.Handlers{
		Elicit: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked <- p.Message
			return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"ok": true}}, nil
		},
	}})
	ctx := testContext(t)
	res := startReport(t, c)
	id := res.Task.ID()
	if _, err := r.mem.RequestInput(id, mcp.InputRequests{"go": formRequest()}, "need input"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := res.Task.Wait(ctx); done <- err }()
	for m := range cnt.answered {
		if m == mcp.MethodTasksUpdate {
			break
		}
	}
	got, err := r.mem.TakeInputResponses(id)
	if err != nil || !strings.Contains(string(got["go"]), `"accept"`) {
		t.Fatalf("responses %s %v", got["go"], err)
	}
	r.mem.Complete(id, &mcp.CallToolResult{StructuredContent: []byte(`{"rows":1}`)}, "done")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if msg := <-asked; msg != "Proceed?" || len(asked) != 0 {
		t.Fatalf("asked %q, %d more", msg, len(asked))
	}
}

func TestCloseEndsWait(t *testing.T) {
	r := newRig(t, rigOptions{listen: true})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cnt := newCounter()
	cnt.answered = make(chan string, 16)
	c, err := client.New(r.url, client.Options{Transport: cnt})
	if err != nil {
		t.Fatal(err)
	}
	res := startReport(t, c)
	done := make(chan error, 1)
	go func() { _, err := res.Task.Wait(context.Background()); done <- err }()
	for m := range cnt.answered {
		if m == mcp.MethodTasksGet { // listening and acknowledged
			break
		}
	}
	c.Close()
	if err := <-done; err == nil {
		t.Fatal("Wait returned no error after Close")
	}
	cnt.next.(*http.Transport).CloseIdleConnections()
}

func TestProgressOnTheResponseStream(t *testing.T) {
	r := newRig(t, rigOptions{})
	c := newClient(t, r.url, client.Options{})
	var got []string
	res, err := c.Call(testContext(t), "steps", nil, client.WithProgress(func(p client.Progress) {
		got = append(got, fmt.Sprintf("%g/%g %s", p.Progress, *p.Total, p.Message))
	}))
	if err != nil || string(res.Result.StructuredContent) != `{"sum":3}` {
		t.Fatalf("%v %+v", err, res)
	}
	if diff := cmp.Diff([]string{"1/3 step 1", "2/3 step 2", "3/3 step 3"}, got); diff != "" {
		t.Fatal(diff)
	}
}

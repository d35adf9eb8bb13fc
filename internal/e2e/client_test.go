package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
)

// requestTimeout bounds one request of these tests.
const requestTimeout = 20 * time.Second

// client speaks 2026-07-28 Streamable HTTP to one node over a real socket,
// as tenant (DevAdmission takes "Authorization: Bearer NAME" as tenant
// NAME). It declares the Tasks extension and form elicitation.
type client struct {
	url    string
	tenant string
	hc     *http.Client
	nextID atomic.Int64
}

func newClient(t *testing.T, url, tenant string) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{url: url, tenant: tenant, hc: &http.Client{Transport: tr}}
}

// tasksCaps are the client capabilities sent with every request: the Tasks
// extension, and form elicitation for tasks that ask for input.
var tasksCaps = map[string]any{
	"elicitation": map[string]any{},
	"extensions":  map[string]any{mcp.ExtensionTasks: map[string]any{}},
}

// request builds a POST of method; id 0 takes the next ID. name is the
// Mcp-Name header value (tool name or task ID), "" for none.
func (c *client) request(ctx context.Context, id int64, method, name string, params map[string]any) (*http.Request, error) {
	if id == 0 {
		id = c.nextID.Add(1)
	}
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	p["_meta"] = map[string]any{
		mcp.MetaProtocolVersion:    mcp.LatestProtocolVersion,
		mcp.MetaClientCapabilities: tasksCaps,
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LatestProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", mcp.EncodeHeaderValue(name))
	}
	req.Header.Set("Authorization", "Bearer "+c.tenant)
	return req, nil
}

// call sends one request and parses the response, JSON or SSE. A
// transport error (refused or reset connection, timeout) is returned as
// err; an HTTP response of any status is returned parsed.
func (c *client) call(ctx context.Context, id int64, method, name string, params map[string]any) (*mcptest.Response, error) {
	req, err := c.request(ctx, id, method, name, params)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return mcptest.ParseResponse(resp.StatusCode, resp.Header, body)
}

// mustCall is call bounded by requestTimeout, failing the test on a
// transport error.
func (c *client) mustCall(t *testing.T, method, name string, params map[string]any) *mcptest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	r, err := c.call(ctx, 0, method, name, params)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, name, c.url, err)
	}
	return r
}

// createReport calls reports.generate and returns the task ID.
func (c *client) createReport(t *testing.T, args map[string]any) string {
	t.Helper()
	id, err := c.tryCreateReport(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// tryCreateReport calls reports.generate, returning an error for anything
// but a task handle.
func (c *client) tryCreateReport(ctx context.Context, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	r, err := c.call(ctx, 0, mcp.MethodToolsCall, "reports.generate", map[string]any{"name": "reports.generate", "arguments": args})
	if err != nil {
		return "", err
	}
	if r.Error != nil {
		return "", fmt.Errorf("reports.generate: HTTP %d, error %v", r.Status, r.Error)
	}
	h, err := r.TaskHandle()
	if err != nil {
		return "", fmt.Errorf("reports.generate: %v: %s", err, r.Body)
	}
	if h.TaskID == "" {
		return "", errors.New("reports.generate: a task handle without an ID")
	}
	return h.TaskID, nil
}

// getTask sends tasks/get and returns the task, failing the test on any
// error.
func (c *client) getTask(t *testing.T, id string) *mcp.GetTaskResult {
	t.Helper()
	g, _, err := c.tryGetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// tryGetTask sends tasks/get and returns the task and the raw result.
func (c *client) tryGetTask(ctx context.Context, id string) (*mcp.GetTaskResult, json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	r, err := c.call(ctx, 0, mcp.MethodTasksGet, id, map[string]any{"taskId": id})
	if err != nil {
		return nil, nil, err
	}
	if r.Error != nil {
		return nil, nil, fmt.Errorf("tasks/get on %s: HTTP %d, error %v", c.url, r.Status, r.Error)
	}
	g, err := r.Task()
	if err != nil {
		return nil, nil, err
	}
	if g.TaskID != id {
		return nil, nil, fmt.Errorf("tasks/get %s returned task %s", id, g.TaskID)
	}
	return g, r.Result, nil
}

// awaitTerminal polls tasks/get until the task is terminal.
func (c *client) awaitTerminal(t *testing.T, id string, timeout time.Duration) *mcp.GetTaskResult {
	t.Helper()
	var g *mcp.GetTaskResult
	poll(t, timeout, 50*time.Millisecond, func() string {
		return fmt.Sprintf("task %s still %q", id, g.Status)
	}, func() bool {
		g = c.getTask(t, id)
		return g.Status.Terminal()
	})
	return g
}

// Report is the result of reports.generate (cmd/taskwire's Report).
type Report struct {
	AccountID   string `json:"accountId"`
	Rows        int    `json:"rows"`
	Checksum    string `json:"checksum"`
	GeneratedAt string `json:"generatedAt"`
}

// report decodes the structuredContent of a completed report task.
func report(t *testing.T, g *mcp.GetTaskResult) Report {
	t.Helper()
	if g.Status != mcp.TaskCompleted {
		t.Fatalf("task %s is %q (error %v), want completed", g.TaskID, g.Status, g.Error)
	}
	var res struct {
		IsError           bool   `json:"isError"`
		StructuredContent Report `json:"structuredContent"`
	}
	if err := json.Unmarshal(g.Result, &res); err != nil || res.IsError {
		t.Fatalf("task %s result %s: %v", g.TaskID, g.Result, err)
	}
	return res.StructuredContent
}

// stream is a subscriptions/listen response read over the socket as it
// arrives.
type stream struct {
	resp   *http.Response
	ctx    context.Context // the request's; canceled by close
	cancel context.CancelFunc
	msgs   chan json.RawMessage // closed when the stream ends
	done   chan struct{}
}

// listen opens subscriptions/listen for taskIDs and returns once the
// response has started. The stream is closed when the test ends.
func (c *client) listen(t *testing.T, taskIDs ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := c.request(ctx, 0, mcp.MethodSubscriptionsListen, "", map[string]any{
		"notifications": map[string]any{"taskIds": taskIDs},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	start, cancelStart := context.WithTimeout(context.Background(), requestTimeout)
	defer cancelStart()
	go func() { // only the response headers are bounded
		<-start.Done()
		if errors.Is(start.Err(), context.DeadlineExceeded) {
			cancel()
		}
	}()
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("listen on %s: %v", c.url, err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("listen on %s: HTTP %d %s: %s", c.url, resp.StatusCode, ct, b)
	}
	s := &stream{resp: resp, ctx: ctx, cancel: cancel, msgs: make(chan json.RawMessage, 256), done: make(chan struct{})}
	go s.read()
	t.Cleanup(s.close)
	return s
}

// read splits the SSE body into the data of each event.
func (s *stream) read() {
	defer close(s.done)
	defer close(s.msgs)
	br := bufio.NewReaderSize(s.resp.Body, 64<<10)
	var data []string
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && err == nil:
			if len(data) > 0 {
				select {
				case s.msgs <- json.RawMessage(strings.Join(data, "\n")):
				case <-s.ctx.Done():
					return
				}
				data = nil
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		if err != nil {
			return
		}
	}
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
	<-s.done
}

// next returns the next message, or an error when the stream ended or
// timeout passed.
func (s *stream) next(timeout time.Duration) (json.RawMessage, error) {
	select {
	case m, ok := <-s.msgs:
		if !ok {
			return nil, errors.New("listen stream ended")
		}
		return m, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("no listen message within %v", timeout)
	}
}

// rpcMessage is any JSON-RPC message of a listen stream.
type rpcMessage struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *mcp.Error      `json:"error"`
}

// awaitAck reads the acknowledgement and returns the accepted task IDs.
func (s *stream) awaitAck(t *testing.T) []string {
	t.Helper()
	m, err := s.next(requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var msg rpcMessage
	var ack mcp.AcknowledgedParams
	if err := json.Unmarshal(m, &msg); err != nil || msg.Method != mcp.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first listen message %s, want the acknowledgement", m)
	}
	if err := json.Unmarshal(msg.Params, &ack); err != nil || ack.Notifications == nil {
		t.Fatalf("acknowledgement %s: %v", m, err)
	}
	return ack.Notifications.TaskIDs
}

// awaitTerminal reads notifications/tasks until one carries id in a
// terminal state, and returns it.
func (s *stream) awaitTerminal(t *testing.T, id string, timeout time.Duration) mcp.TaskNotificationParams {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []string
	for {
		m, err := s.next(time.Until(deadline))
		if err != nil {
			t.Fatalf("waiting for the terminal notification of %s: %v (seen %v)", id, err, seen)
		}
		var msg rpcMessage
		if err := json.Unmarshal(m, &msg); err != nil {
			t.Fatalf("listen message %s: %v", m, err)
		}
		if msg.Method != mcp.NotificationTasks {
			t.Fatalf("unexpected listen message %s", m)
		}
		var n mcp.TaskNotificationParams
		if err := json.Unmarshal(msg.Params, &n); err != nil {
			t.Fatalf("notifications/tasks %s: %v", m, err)
		}
		seen = append(seen, n.TaskID+":"+string(n.Status))
		if n.TaskID == id && n.Status.Terminal() {
			return n
		}
	}
}

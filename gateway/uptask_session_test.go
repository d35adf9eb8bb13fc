package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
)

// sessionLog is an http.RoundTripper that records the HTTP method, the
// JSON-RPC method and the Mcp-Session-Id of every request.
type sessionLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []sentRequest
}

type sentRequest struct{ verb, method, session string }

func (l *sessionLog) RoundTrip(r *http.Request) (*http.Response, error) {
	m := sentRequest{verb: r.Method, session: r.Header.Get(mcp.HeaderSessionID)}
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		m.method = msg.Method
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	l.mu.Lock()
	l.seen = append(l.seen, m)
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

// take returns what was recorded since the last take.
func (l *sessionLog) take() []sentRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.seen
	l.seen = nil
	return out
}

// TestUpstreamTaskSessionResumed: with a 2025-11-25 upstream, a gateway
// closed while it follows an upstream task leaves the task's session open
// (no DELETE for it), and a new gateway on the same store follows the task
// in that session (every tasks/get and tasks/result carries its ID), to
// its result, with one upstream call; the upstream then lists no task of
// the session that needs a run, and the second gateway ends it.
func TestUpstreamTaskSessionResumed(t *testing.T) {
	dir := t.TempDir()
	up := newTaskUpstream(t, "127.0.0.1:0", filepath.Join(dir, "upstream.db"))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	log := &sessionLog{next: tr}
	opts := gateway.Options{Upstream: up.url, TaskTools: []string{"*.task"}, RetryTools: []string{"again.*"},
		ProtocolVersions: []string{mcp.ProtocolVersion20251125}, Transport: log}
	db := filepath.Join(dir, "gateway.db")
	first := startGatewayOn(t, opts, db)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	id := callTask(t, ctx, newClient(t, first.url), "again.task", BuildIn{Steps: 2, HoldAt: 1}).ID()
	up.awaitHeld(t, ctx, "again.task")
	first.stop(t)
	session, sent := "", log.take()
	for _, m := range sent {
		if m.method == mcp.MethodToolsCall {
			session = m.session
		}
	}
	if session == "" {
		t.Fatal("the upstream tools/call carried no session ID")
	}
	deletes := 0
	for _, m := range sent {
		if m.verb == http.MethodDelete {
			deletes++
			if m.session == session {
				t.Error("the closed gateway ended the session of its upstream task")
			}
		}
	}
	if deletes != 1 {
		t.Errorf("the closed gateway sent %d DELETEs, want 1 (its pass-through session)", deletes)
	}

	second := startGatewayOn(t, opts, db)
	up.releaseAll()
	out, err := newClient(t, second.url).Task(id).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(BuildOut{Steps: 2, Call: 1}, structured[BuildOut](t, out)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	second.stop(t)
	followed, ended := 0, 0
	for _, m := range log.take() {
		switch {
		case m.method == mcp.MethodTasksGet || m.method == mcp.MethodTasksResult:
			followed++
			if m.session != session {
				t.Errorf("%s in another session than the task's", m.method)
			}
			if ended > 0 {
				t.Errorf("%s after the session was ended", m.method)
			}
		case m.method == mcp.MethodToolsCall:
			t.Error("the second gateway called the tool again")
		case m.verb == http.MethodDelete && m.session == session:
			ended++
		}
	}
	if followed == 0 {
		t.Error("the second gateway did not follow the task")
	}
	// The session's only task is settled: the second gateway ends it.
	if ended != 1 {
		t.Errorf("the second gateway ended the resumed session %d times, want once", ended)
	}
}

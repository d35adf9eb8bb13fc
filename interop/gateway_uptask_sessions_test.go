package interop

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
)

// sessionsServer is an mcp-go v1.2.1 server with the 2025-11-25 tasks
// whose slow.build answers at once, except a call with steps 2, which it
// holds until release is closed. It records the session of every
// tools/call and of every DELETE it receives.
type sessionsServer struct {
	url     string
	release chan struct{}
	once    sync.Once
	held    chan struct{}
	polled  chan struct{}
	calls   atomic.Int64

	mu      sync.Mutex
	callsIn []string // the session of each tools/call
	deleted []string // the session of each DELETE
}

func newSessionsServer(t *testing.T) *sessionsServer {
	u := &sessionsServer{release: make(chan struct{}), held: make(chan struct{}, 4), polled: make(chan struct{}, 1)}
	s := mcpGoSlowBuildServer("peer-mcpgo-sessions", func() {}, func(_ context.Context, req mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
		call := int(u.calls.Add(1))
		if steps, _ := req.GetArguments()["steps"].(float64); steps == 2 {
			u.held <- struct{}{}
			<-u.release
		}
		return mcpgomcp.NewToolResultStructured(map[string]int{"call": call}, `{"call":`+itoa(call)+`}`), nil
	})
	h := mcpgoserver.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sid := r.Header.Get("Mcp-Session-Id")
		u.mu.Lock()
		switch {
		case r.Method == http.MethodDelete:
			u.deleted = append(u.deleted, sid)
		case bytes.Contains(body, []byte(`"method":"tools/call"`)):
			u.callsIn = append(u.callsIn, sid)
		}
		u.mu.Unlock()
		if bytes.Contains(body, []byte(`"method":"tasks/get"`)) {
			select {
			case u.polled <- struct{}{}:
			default:
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.once.Do(func() { close(u.release) })
		srv.Close()
	})
	u.url = srv.URL + "/mcp"
	return u
}

// lastCallSession is the session of the latest tools/call.
func (u *sessionsServer) lastCallSession() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.callsIn[len(u.callsIn)-1]
}

func (u *sessionsServer) wasDeleted(sid string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Contains(u.deleted, sid)
}

// TestGatewayMCPGoResumedSessionEnded: a gateway that resumed the session
// of a closed one, to follow a task the closed one left unfinished, ends
// that session with DELETE once none of its tasks needs a run, in front
// of mcp-go, which lists the tasks of a session (tasks/list): the task it
// followed, and one the closed gateway had settled before (told by the
// resumed task's checkpoint). A session where the upstream lists a task
// no run of this gateway settled (here, one a foreign client made in it)
// is kept open.
func TestGatewayMCPGoResumedSessionEnded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	newGateway := func(t *testing.T, up *sessionsServer) *gateway.Gateway {
		g, err := gateway.New(ctx, gateway.Options{
			Upstream: up.url, TaskTools: []string{"slow.*"}, RetryTools: []string{"slow.*"},
			ProtocolVersions: []string{mcp.ProtocolVersion20251125},
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	// leaveUnfinished runs a gateway that settles a task (with done) and
	// then leaves one held, and closes it; it returns the held task's ID
	// and the session of the tasks.
	leaveUnfinished := func(t *testing.T, up *sessionsServer, db string, done bool) (string, string) {
		g1 := newGateway(t, up)
		url, stop := gatewayNodeOn(t, ctx, g1, db)
		c := gatewayClient(t, url, nil)
		if done {
			res, err := c.Call(ctx, "slow.build", map[string]int{"steps": 1})
			if err != nil || res.Task == nil {
				t.Fatalf("slow.build: %+v %v, want a task", res, err)
			}
			if _, err := res.Task.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		res, err := c.Call(ctx, "slow.build", map[string]int{"steps": 2})
		if err != nil || res.Task == nil {
			t.Fatalf("slow.build: %+v %v, want a task", res, err)
		}
		for _, ch := range []chan struct{}{up.held, up.polled} {
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatal("the held call was not made, or its task not followed")
			}
		}
		sid := up.lastCallSession()
		stop()
		if err := g1.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
		if up.wasDeleted(sid) {
			t.Fatal("the closed gateway ended the session of its unfinished task")
		}
		return res.Task.ID(), sid
	}
	resume := func(t *testing.T, up *sessionsServer, db, id string) {
		g2 := newGateway(t, up)
		url, stop := gatewayNodeOn(t, ctx, g2, db)
		up.once.Do(func() { close(up.release) })
		out, err := gatewayClient(t, url, nil).Task(id).Wait(ctx)
		if err != nil || out.IsError {
			t.Fatalf("the resumed task: %+v %v", out, err)
		}
		stop()
		if err := g2.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	}

	t.Run("every task settled", func(t *testing.T) {
		up := newSessionsServer(t)
		db := filepath.Join(t.TempDir(), "gateway.db")
		id, sid := leaveUnfinished(t, up, db, true)
		resume(t, up, db, id)
		if !up.wasDeleted(sid) {
			t.Error("the resumed session was not ended with DELETE once its tasks were settled")
		}
		if n := up.calls.Load(); n != 2 {
			t.Errorf("the mcp-go tool was called %d times, want twice (once per task)", n)
		}
	})

	t.Run("a task no run settled", func(t *testing.T) {
		up := newSessionsServer(t)
		db := filepath.Join(t.TempDir(), "gateway.db")
		id, sid := leaveUnfinished(t, up, db, false)
		// A task in that session that no gateway task follows.
		foreign, err := client.New(up.url, client.Options{
			ProtocolVersions: []string{mcp.ProtocolVersion20251125}, KeepSession: true,
			ResumeSession: &client.SessionResume{ID: sid, ProtocolVersion: mcp.ProtocolVersion20251125},
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := foreign.Call(ctx, "slow.build", map[string]int{"steps": 1}, client.PreferTask())
		if err != nil || res.Task == nil {
			t.Fatalf("the foreign call: %+v %v, want a task", res, err)
		}
		foreign.Close()
		resume(t, up, db, id)
		if up.wasDeleted(sid) {
			t.Error("the resumed session was ended though the upstream lists a task no run settled")
		}
	})
}

package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// refusedDial returns the error of a real connection refused on loopback:
// what a store's driver wraps when its database is down.
func refusedDial(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		t.Skip("something listens on the closed port")
	}
	return err
}

// TestStoreOutageAnswers503: a task operation whose store call fails
// because the store is out of reach (its own deadline passed, the
// connection was refused, or it says task.ErrUnavailable) answers HTTP 503
// with Retry-After and the fixed -32603 body on tasks/get and tasks/cancel;
// any other store failure stays the fixed internal error under HTTP 200.
// A creation whose handler's store call failed stays 200 -32603 either
// way: the task may have been committed, and a 503 says nothing was stored.
func TestStoreOutageAnswers503(t *testing.T) {
	const internal = `{"code":-32603,"message":"Internal error"}`
	causes := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"store deadline", fmt.Errorf("postgres: find task: %w", context.DeadlineExceeded), true},
		{"connection refused", fmt.Errorf("postgres: find task: %w", refusedDial(t)), true},
		{"marked unavailable", fmt.Errorf("custom: %w", task.ErrUnavailable), true},
		{"other failure", errors.New("postgres: find task: syntax error"), false},
	}
	type answer struct {
		Status     int
		RetryAfter string
		Error      string
	}
	for _, cause := range causes {
		want := answer{http.StatusOK, "", internal}
		if cause.unavailable {
			want = answer{http.StatusServiceUnavailable, "1", internal}
		}
		r := newTaskRig(t, func(r *taskRig, _ *server.Options, _ *server.Endpoint) {
			r.create = func(*task.CreationContext) (task.Handle, error) { return task.Handle{}, cause.err }
		})
		r.set(func() {
			r.mgr.find = func(task.RequestContext) (task.Task, bool, error) { return task.Task{}, false, cause.err }
			r.mgr.cancelErr = cause.err
		})
		for _, req := range []struct {
			name string
			req  *http.Request
			want answer
		}{
			{"tasks/get", taskReq("tasks/get", "tid-1", taskCaps, "", nil), want},
			{"tasks/cancel", taskReq("tasks/cancel", "tid-1", taskCaps, "", nil), want},
			{"task creation", taskCallReq("build", `{"n":1}`, taskCaps, nil), answer{http.StatusOK, "", internal}},
		} {
			res := r.do(t, req.req)
			got := answer{Status: res.Status, RetryAfter: res.Header.Get("Retry-After")}
			if res.Error != nil {
				got.Error = fmt.Sprintf(`{"code":%d,"message":%q}`, res.Error.Code, res.Error.Message)
				if res.Error.Data != nil {
					got.Error += " with data"
				}
			}
			if diff := cmp.Diff(req.want, got); diff != "" {
				t.Errorf("%s, %s (-want +got):\n%s", cause.name, req.name, diff)
			}
		}
	}
}

// TestListenRefusedWhileStoreUnreachable: a listen whose first lookup
// finds the store out of reach is refused before its stream opens, with
// 503, Retry-After and the fixed -32603, after that one lookup (the other
// IDs are not looked up); a lookup failing otherwise still only leaves its
// ID out of the acknowledgement (TestListenAcknowledgesHonouredSubset).
func TestListenRefusedWhileStoreUnreachable(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	first := r.createTask(t, `{"n":1}`, asAlice)
	second := r.createTask(t, `{"n":2}`, asAlice)
	r.set(func() {
		r.mgr.find = func(task.RequestContext) (task.Task, bool, error) {
			return task.Task{}, false, fmt.Errorf("postgres: find task: %w", context.DeadlineExceeded)
		}
	})
	r.takeCalls()
	lc := startListen(r.srv, "7", idsFilter(first, second), taskCaps, asAlice)
	res := lc.open(t)
	if res == nil {
		t.Fatal("the listen opened a stream with the store out of reach")
	}
	got := fmt.Sprintf("HTTP %d, Retry-After %q, %s", res.Status, res.Header.Get("Retry-After"), res.Body)
	want := `HTTP 503, Retry-After "1", {"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}}`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listen (-want +got):\n%s", diff)
	}
	if calls := r.takeCalls(); calls.Find != 1 {
		t.Errorf("%d lookups, want 1", calls.Find)
	}
}

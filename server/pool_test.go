package server_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// TestTaskShareKeepsInlineSlots holds every task creation in the handler,
// as a store that stops answering does, and sends more of them than the
// pool and its queue hold: task operations take only their share of the
// slots and queue apart, so an inline tool call still runs at once.
func TestTaskShareKeepsInlineSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var started atomic.Int32
		r := newTaskRig(t, func(r *taskRig, o *server.Options, ep *server.Endpoint) {
			o.HandlerConcurrency, o.HandlerQueue = 4, 4 // TaskConcurrency: 2
			server.AddTool(ep, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *server.Request, in EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
				return nil, EchoOutput{Echo: in.Text}, nil
			})
			r.create = func(cc *task.CreationContext) (task.Handle, error) {
				started.Add(1)
				<-release
				return r.createInMemory(cc)
			}
		})
		const calls = 8 // 2 run, 4 wait in the task queue, 2 are refused
		statuses := make(chan int, calls)
		for range calls {
			go func() { statuses <- r.do(t, taskCallReq("build", `{"n":1}`, taskCaps, nil)).Status }()
		}
		synctest.Wait()
		if n := started.Load(); n != 2 {
			t.Errorf("%d task creations running, want the task share of 2", n)
		}
		inline := r.do(t, taskCallReq("echo", `{"text":"hi"}`, taskCaps, nil))
		if inline.Status != http.StatusOK || errorCode(inline) != 0 {
			t.Errorf("inline call while task operations hold their share: HTTP %d code %d, want 200", inline.Status, errorCode(inline))
		}
		close(release)
		got := map[int]int{}
		for range calls {
			got[<-statuses]++
		}
		if diff := cmp.Diff(map[int]int{http.StatusOK: 6, http.StatusServiceUnavailable: 2}, got); diff != "" {
			t.Errorf("task call statuses (-want +got):\n%s", diff)
		}
	})
}

// TestTaskConcurrencyValidated checks that New refuses a task share
// outside 1..HandlerConcurrency.
func TestTaskConcurrencyValidated(t *testing.T) {
	for _, tc := range []struct {
		handlers, tasks int
		ok              bool
	}{
		{0, 0, true}, {4, 4, true}, {1, 0, true}, {4, 5, false}, {4, -1, false}, {0, 33, false},
	} {
		ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "t", Version: "1"})
		_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, HandlerConcurrency: tc.handlers, TaskConcurrency: tc.tasks})
		if (err == nil) != tc.ok {
			t.Errorf("HandlerConcurrency %d, TaskConcurrency %d: err %v, want ok %v", tc.handlers, tc.tasks, err, tc.ok)
		}
	}
}

// TestTaskQueueWaitBounded holds every task creation in the handler, as a
// store that stops answering does: the task operations queued behind them
// are shed with 503, Retry-After and "Server busy" once they waited
// TaskQueueTimeout, not at the request deadline, while the ones that hold
// the share finish when the store answers.
func TestTaskQueueWaitBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		r := newTaskRig(t, func(r *taskRig, o *server.Options, ep *server.Endpoint) {
			o.HandlerConcurrency, o.HandlerQueue = 4, 8 // TaskConcurrency: 2
			o.TaskQueueTimeout = 2 * time.Second
			o.RequestTimeout = time.Minute
			r.create = func(cc *task.CreationContext) (task.Handle, error) {
				<-release
				return r.createInMemory(cc)
			}
		})
		type answer struct {
			status     int
			retryAfter string
			message    string
			waited     time.Duration
		}
		const calls = 6 // 2 hold the share, 4 wait for it
		answers := make(chan answer, calls)
		start := time.Now()
		for range calls {
			go func() {
				res := r.do(t, taskCallReq("build", `{"n":1}`, taskCaps, nil))
				a := answer{status: res.Status, retryAfter: res.Header.Get("Retry-After"), waited: time.Since(start)}
				if res.Error != nil {
					a.message = res.Error.Message
				}
				answers <- a
			}()
		}
		got := map[answer]int{}
		for range calls - 2 {
			got[<-answers]++
		}
		close(release)
		for range 2 {
			got[<-answers]++
		}
		want := map[answer]int{
			{http.StatusServiceUnavailable, "1", "Server busy", 2 * time.Second}: 4,
			{http.StatusOK, "", "", 2 * time.Second}:                             2,
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(answer{})); diff != "" {
			t.Errorf("answers (-want +got):\n%s", diff)
		}
	})
}

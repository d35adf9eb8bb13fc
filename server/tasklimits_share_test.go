package server_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// stalledCounter is a memory manager whose active-task count waits until
// its context ends, as a count on a store that stopped answering does. It
// records how many counts wait at once.
type stalledCounter struct {
	*memory.Manager
	waiting, peak atomic.Int64
}

func (m *stalledCounter) CountActive(ctx context.Context, _ task.Owner, _ int) (int, error) {
	n := m.waiting.Add(1)
	defer m.waiting.Add(-1)
	for p := m.peak.Load(); n > p && !m.peak.CompareAndSwap(p, n); p = m.peak.Load() {
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestActiveCountInTaskShare checks that the count of a caller's active
// tasks, a store call, runs inside the task operations' share of handler
// slots: with the count stalled, no more counts wait than the share holds,
// further creations are refused with 503, and an inline tool keeps its
// slot.
func TestActiveCountInTaskShare(t *testing.T) {
	mm, err := memory.New(memory.Options{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	m := &stalledCounter{Manager: mm}
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "share", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	server.AddTaskTool[tlIn, any](ep, &mcp.Tool{Name: "create"},
		func(_ context.Context, _ *server.Request, _ tlIn, cc *task.CreationContext) (task.Handle, error) {
			tk, err := mm.Create(cc)
			return task.Handle{ID: tk.ID()}, err
		})
	server.AddTool(ep, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *server.Request, in EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
		return nil, EchoOutput{Echo: in.Text}, nil
	})
	const share = 2
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep}, TaskManager: m, Admission: server.DevAdmission(),
		HandlerConcurrency: 4, TaskConcurrency: share, HandlerQueue: 2,
		TaskLimits: server.TaskLimits{CreateRate: server.NoLimit},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every request's context ends with stall, and with it the counts.
	stall, unstall := context.WithCancel(context.Background())
	defer unstall()
	hs := httptest.NewUnstartedServer(srv)
	hs.Config.BaseContext = func(net.Listener) context.Context { return stall }
	hs.Start()
	defer hs.Close()

	const creators = 8
	statuses := make(chan int, creators)
	var wg sync.WaitGroup
	for i := range creators {
		wg.Go(func() {
			res := tlPost(t, hs, "creator", mcp.MethodToolsCall, "create",
				`{"name":"create","arguments":{"n":`+string(rune('0'+i))+`},"_meta":`+tlMeta+`}`)
			statuses <- res.Status
		})
	}
	// The share holds two counts; the rest wait in its queue or are
	// refused at once.
	refused := 0
	for deadline := time.Now().Add(10 * time.Second); m.waiting.Load() < share || refused < creators-share-2; {
		select {
		case s := <-statuses:
			if s != http.StatusServiceUnavailable {
				t.Fatalf("a creation with the count stalled answered HTTP %d, want 503", s)
			}
			refused++
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d counts waiting, %d creations refused", m.waiting.Load(), refused)
		}
	}
	res := tlPost(t, hs, "reader", mcp.MethodToolsCall, "echo", `{"name":"echo","arguments":{"text":"hi"},"_meta":`+tlMeta+`}`)
	if res.Status != http.StatusOK || res.Error != nil {
		t.Errorf("inline call with the counts stalled: %s", tlOutcome(res))
	}
	if p := m.peak.Load(); p > share {
		t.Errorf("%d counts waited at once; the task share holds %d", p, share)
	}
	unstall()
	wg.Wait()
}

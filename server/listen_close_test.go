package server_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// TestCloseJoinsCallbackGoroutines: Server.Close returns only once the
// goroutines it owns that run application callbacks have ended (a shared
// lookup of a hinted task, a renewal's authorizer, a renewal's lookup),
// even when the callback ignores its canceled context; a callback still
// running after CloseGrace makes Close return an error naming it instead
// of hanging. No goroutine outlives the test.
func TestCloseJoinsCallbackGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, kind := range []string{"shared task lookup", "subscription authorizer", "task lookup"} {
		for _, tc := range []struct {
			name    string
			bound   time.Duration // of CloseContext; zero means Close
			hold    time.Duration // how long the callback runs past its cancellation
			elapsed time.Duration // how long Close should take
			err     string        // "" means nil
		}{
			{"returns within the grace", 0, 2 * time.Second, 2 * time.Second, ""},
			{"outlives the grace", 0, time.Hour, server.CloseGrace, "1 " + kind},
			{"outlives CloseContext", time.Second, time.Hour, time.Second, "1 " + kind},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					closeWhileStuck(t, kind, tc.bound, tc.hold, tc.elapsed, tc.err)
				})
			})
		}
	}
}

// closeWhileStuck makes the callback of kind block for hold, ignoring
// cancellation, then closes the server (with CloseContext bounded by
// bound, if not zero) and checks how long that took, its error and that
// the callback had returned when it returned nil.
func closeWhileStuck(t *testing.T, kind string, bound, hold, elapsed time.Duration, wantErr string) {
	var stuck atomic.Bool // the next callback of kind blocks
	entered := make(chan struct{}, 1)
	var returned atomic.Bool
	block := func() {
		if stuck.CompareAndSwap(true, false) {
			entered <- struct{}{}
			time.Sleep(hold) // ignores every cancellation
			returned.Store(true)
		}
	}
	auth := &testAuthorizer{fn: func(_ context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
		if req.Renewal && kind == "subscription authorizer" {
			block()
		}
		return server.SubscriptionGrant{Until: time.Now().Add(4 * time.Second)}, nil
	}}
	r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth, AuthorizationTimeout: time.Hour}, nil)
	id := r.createTask(t, `{"n":1}`, nil)
	r.set(func() {
		r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
			if kind != "subscription authorizer" {
				block()
			}
			return r.mem.FindTask(context.Background(), rc)
		}
	})
	lc, _ := listen(t, r.srv, "1", nil, id)
	stuck.Store(true)
	if kind == "shared task lookup" {
		taskMust(t)(r.mem.MarkWorking(id, "one")) // the hint's fan-out looks the task up
	} // otherwise the renewal, half-way through the 4 s grant, authorizes and looks up
	<-entered

	start := time.Now()
	var err error
	if bound == 0 {
		err = r.srv.Close()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		err = r.srv.CloseContext(ctx)
		cancel()
	}
	if d := time.Since(start); d != elapsed {
		t.Errorf("Close took %v, want %v", d, elapsed)
	}
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("Close = %v, want nil", err)
	case wantErr == "" && !returned.Load():
		t.Error("Close returned before the callback's goroutine ended")
	case wantErr != "" && (!errors.Is(err, server.ErrStillRunning) || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("Close = %v, want ErrStillRunning naming %q", err, wantErr)
	}
	time.Sleep(hold) // the callback returns: its goroutine ends
	synctest.Wait()
	lc.wait(t)
}

// TestCloseJoinsFanOut, over real loopback HTTP/1.1, where the fan-out
// writes the listens' taken-over streams: Server.Close returns only once
// the fan-out's shared lookup, which ignores its canceled context, has
// returned, and the delivery that waited for it has ended. No goroutine
// outlives the test.
func TestCloseJoinsFanOut(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // registered first: runs last
	r, _ := newListenRig(t, nil, func(_ *taskRig, o *server.Options) {
		o.KeepAliveInterval = time.Hour
	})
	id := r.createTask(t, `{"n":1}`, nil)
	takenOverListen(t, r, "7", id)
	takenOverListen(t, r, "8", id)

	entered := make(chan struct{})
	release := make(chan struct{})
	var returned atomic.Bool
	var once sync.Once
	r.set(func() {
		r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
			once.Do(func() {
				close(entered)
				<-release // ignores every cancellation until released
				returned.Store(true)
			})
			return r.mem.FindTask(context.Background(), rc)
		}
	})
	taskMust(t)(r.mem.MarkWorking(id, "one")) // the hint's fan-out looks the task up
	waitFor(t, "the fan-out's lookup", entered)

	ended := make(chan error, 1)
	go func() { ended <- r.srv.Close() }()
	// The lookup holds on well past Close's own work.
	time.AfterFunc(200*time.Millisecond, func() { close(release) })
	if err := <-ended; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !returned.Load() {
		t.Error("Close returned before the fan-out's lookup did")
	}
}

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// Tests of the bounds of subscriptions/listen: capacity, renewal, the
// projection deadline and slot, ordering under a storm of hints, and the
// per-stream write timeout over real loopback HTTP.

// TestListenCapacity: MaxSubscriptions and MaxPerTenant refuse a new listen
// with 503 before its stream opens, before the authorizer and any lookup,
// and without affecting the listens already open; closing one frees its
// place.
func TestListenCapacity(t *testing.T) {
	r, auth := newListenRig(t, &server.SubscriptionOptions{MaxSubscriptions: 3, MaxPerTenant: 2}, nil)
	const full = `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Too many subscriptions"}}`
	at := r.createTask(t, `{"n":1}`, asAlice)
	bt := r.createTask(t, `{"n":2}`, asBob)
	alice1, _ := listen(t, r.srv, "1", asAlice, at)
	alice2, _ := listen(t, r.srv, "2", asAlice, at)
	auth.take()
	r.takeCalls()

	refused := func(who map[string]string) {
		t.Helper()
		lc := startListen(r.srv, "7", idsFilter(at, bt), taskCaps, who)
		res := lc.open(t)
		if res == nil {
			t.Fatal("the stream opened")
		}
		r.expect(t, res, 503, full, taskCalls{Admit: 1})
		if n := len(auth.take()); n != 0 {
			t.Errorf("the authorizer was asked %d times", n)
		}
	}
	refused(asAlice) // per tenant
	bob, _ := listen(t, r.srv, "3", asBob, bt)
	auth.take()
	r.takeCalls()
	refused(map[string]string{"Authorization": "Bearer carol"}) // in total
	refused(asBob)

	taskMust(t)(r.mem.MarkWorking(at, "for alice"))
	taskMust(t)(r.mem.MarkWorking(bt, "for bob"))
	alice1.expect(t, note(at, "working", "for alice"))
	alice2.expect(t, note(at, "working", "for alice"))
	bob.expect(t, note(bt, "working", "for bob"))

	alice1.close(t)
	alice3, acked := listen(t, r.srv, "4", asAlice, at)
	if !slices.Equal(acked, []string{at}) {
		t.Errorf("acknowledged %q", acked)
	}
	r.srv.Close()
	alice2.expectEnd(t, "end")
	alice3.expectEnd(t, "end")
	bob.expectEnd(t, "end")
}

// leaseAuthorizer grants lease at a time; renew decides renewals.
func leaseAuthorizer(lease time.Duration, renew func(req *server.SubscriptionRequest) ([]string, error)) *testAuthorizer {
	return &testAuthorizer{fn: func(_ context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
		g := server.SubscriptionGrant{Until: time.Now().Add(lease)}
		if req.Renewal && renew != nil {
			ids, err := renew(req)
			if err != nil {
				return server.SubscriptionGrant{}, err
			}
			g.TaskIDs = ids
		}
		return g, nil
	}}
}

// TestListenRenewalTiming: a grant is renewed at half its lease plus a
// stagger below min(1 s, lease/20), again and again, with the accepted IDs.
func TestListenRenewalTiming(t *testing.T) {
	for _, lease := range []time.Duration{4 * time.Second, 10 * time.Second, time.Minute, 5 * time.Minute} {
		t.Run(lease.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				auth := leaseAuthorizer(lease, nil)
				r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth, MaxLifetime: 24 * time.Hour}, nil)
				a := r.createTask(t, `{"n":1}`, nil)
				b := r.createTask(t, `{"n":2}`, nil)
				lc, _ := listen(t, r.srv, "7", nil, b, a, "tid-unknown")
				time.Sleep(8*lease + lease/3)
				synctest.Wait()
				calls := auth.take()
				if len(calls) < 9 {
					t.Fatalf("%d authorizations in %v", len(calls), 8*lease)
				}
				stagger := min(time.Second, lease/20)
				want := []string{a, b}
				slices.Sort(want)
				for i, c := range calls[1:] {
					d := c.At.Sub(calls[i].At)
					if d < lease/2 || d >= lease/2+stagger {
						t.Errorf("renewal %d after %v, want [%v, %v)", i+1, d, lease/2, lease/2+stagger)
					}
					if !c.Req.Renewal || !slices.Equal(c.Req.TaskIDs, want) {
						t.Errorf("renewal %d: %+v", i+1, c.Req)
					}
				}
				taskMust(t)(r.mem.MarkWorking(a, "still listening"))
				lc.expect(t, note(a, "working", "still listening"))
				r.srv.Close()
				lc.expectEnd(t, "end")
			})
		})
	}
}

// TestListenRenewalNarrows: a renewal can remove accepted IDs but never
// add any, whatever the grant lists.
func TestListenRenewalNarrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var next []string
		auth := leaseAuthorizer(10*time.Second, func(*server.SubscriptionRequest) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			return next, nil
		})
		r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth}, nil)
		a := r.createTask(t, `{"n":1}`, nil)
		b := r.createTask(t, `{"n":2}`, nil)
		c := r.createTask(t, `{"n":3}`, nil)
		other := r.createTask(t, `{"n":4}`, nil)
		lc, acked := listen(t, r.srv, "7", nil, a, b, c)
		if len(acked) != 3 {
			t.Fatalf("acknowledged %q", acked)
		}
		setNext := func(ids ...string) {
			mu.Lock()
			next = ids
			mu.Unlock()
		}
		sorted := func(ids ...string) []string { slices.Sort(ids); return ids }

		setNext(a, c, other) // drops b; other was never requested
		time.Sleep(6 * time.Second)
		synctest.Wait()
		taskMust(t)(r.mem.MarkWorking(b, "revoked"))
		taskMust(t)(r.mem.MarkWorking(other, "never requested"))
		taskMust(t)(r.mem.MarkWorking(c, "kept"))
		lc.expect(t, note(c, "working", "kept"))

		// Renewals come at 5 to 5.5 s intervals: the second in [10 s, 11 s),
		// the third in [15 s, 16.5 s), the fourth not before 20 s.
		setNext(a, b, c, other) // tries to widen again
		time.Sleep(6 * time.Second)
		synctest.Wait()
		taskMust(t)(r.mem.MarkWorking(b, "still revoked"))
		taskMust(t)(r.mem.MarkWorking(a, "kept"))
		lc.expect(t, note(a, "working", "kept"))

		time.Sleep(6 * time.Second)
		synctest.Wait()
		calls := auth.take()
		var got [][]string
		for _, call := range calls {
			got = append(got, call.Req.TaskIDs)
		}
		want := [][]string{{a, b, c}, sorted(a, b, c), sorted(a, c), sorted(a, c)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("authorized IDs (-want +got):\n%s", diff)
		}
		r.srv.Close()
		lc.expectEnd(t, "end")
	})
}

// TestListenRenewalFailureEndsGracefully: a renewal error, an expired
// renewal and a renewal that outlives AuthorizationTimeout end the listen
// with its final result.
func TestListenRenewalFailureEndsGracefully(t *testing.T) {
	tests := map[string]func(ctx context.Context) (server.SubscriptionGrant, error){
		"error": func(context.Context) (server.SubscriptionGrant, error) {
			return server.SubscriptionGrant{}, errors.New("revoked")
		},
		"expired": func(context.Context) (server.SubscriptionGrant, error) {
			return server.SubscriptionGrant{Until: time.Now()}, nil
		},
		"timeout": func(ctx context.Context) (server.SubscriptionGrant, error) {
			<-ctx.Done()
			return server.SubscriptionGrant{Until: time.Now().Add(time.Hour)}, nil
		},
	}
	for name, renew := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				auth := &testAuthorizer{fn: func(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
					if req.Renewal {
						return renew(ctx)
					}
					return server.SubscriptionGrant{Until: time.Now().Add(10 * time.Second)}, nil
				}}
				r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth, AuthorizationTimeout: time.Second}, nil)
				a := r.createTask(t, `{"n":1}`, nil)
				start := time.Now()
				lc, _ := listen(t, r.srv, "7", nil, a)
				lc.expectEnd(t, "end")
				d := time.Since(start)
				lo, hi := 5*time.Second, 5500*time.Millisecond
				if name == "timeout" {
					lo, hi = lo+time.Second, hi+time.Second
				}
				if d < lo || d >= hi {
					t.Errorf("ended after %v, want [%v, %v)", d, lo, hi)
				}
				diffLifecycle(t, r, "start subscriptions/listen", "finish subscriptions/listen complete")
			})
		})
	}
}

// TestListenSuppressedTerminalSurvivesRenewal: a completed notification
// suppressed because the tool is hidden does not consume the task: the
// renewal keeps its ID (its lookup renders nothing), and a later hint once
// the tool is visible projects it.
func TestListenSuppressedTerminalSurvivesRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := leaseAuthorizer(10*time.Second, nil)
		r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth}, nil)
		c := r.createTask(t, `{"n":1}`, nil)
		lc, _ := listen(t, r.srv, "7", nil, c)
		r.set(func() { r.hide = true })
		completeTask(t, r, c)
		synctest.Wait()
		r.takeCalls()
		time.Sleep(6 * time.Second) // one renewal while the tool is hidden
		synctest.Wait()
		diffCalls(t, "renewal", taskCalls{Find: 1}, r.takeCalls())
		r.set(func() { r.hide = false })
		r.mem.EventPublisher().Publish(c)
		lc.expect(t, note(c, "completed", "done"))
		calls := auth.take()
		if len(calls) != 2 || !slices.Equal(calls[1].Req.TaskIDs, []string{c}) {
			t.Errorf("authorizations %+v", calls)
		}
		r.srv.Close()
		lc.expectEnd(t, "end")
	})
}

// TestListenRenewalWaveBounded: renewal authorizations run in the shared
// maintenance slots (max(1, HandlerConcurrency/2)), so a wave of
// listeners renewing together calls the authorizer one slot at a time.
func TestListenRenewalWaveBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var inFlight, peak, renewals int
		auth := &testAuthorizer{fn: func(_ context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
			if req.Renewal {
				mu.Lock()
				inFlight++
				renewals++
				peak = max(peak, inFlight)
				mu.Unlock()
				time.Sleep(time.Second) // a slow authorization service
				mu.Lock()
				inFlight--
				mu.Unlock()
			}
			return server.SubscriptionGrant{Until: time.Now().Add(10 * time.Second)}, nil
		}}
		r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth}, func(_ *taskRig, o *server.Options) {
			o.HandlerConcurrency = 2 // one maintenance slot
		})
		tid := r.createTask(t, `{"n":1}`, nil)
		var streams []*listenConn
		for i := range 4 {
			lc, _ := listen(t, r.srv, fmt.Sprint(i), nil, tid)
			streams = append(streams, lc)
		}
		time.Sleep(9 * time.Second) // the wave: four renewals from 5 s, one second each
		synctest.Wait()
		mu.Lock()
		if renewals != 4 || peak != 1 {
			t.Errorf("%d renewals, %d at once; want 4, one at a time", renewals, peak)
		}
		mu.Unlock()
		taskMust(t)(r.mem.MarkWorking(tid, "after the wave"))
		for _, lc := range streams {
			lc.expect(t, note(tid, "working", "after the wave"))
		}
		r.srv.Close()
		for _, lc := range streams {
			lc.expectEnd(t, "end")
		}
	})
}

// TestListenRenewalWaitCannotOutliveGrant: a renewal still waiting for a
// maintenance slot when its grant expires ends its listen gracefully.
func TestListenRenewalWaitCannotOutliveGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		auth := &testAuthorizer{fn: func(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
			if req.Renewal && req.TaskIDs[0] == "tid-hog" {
				<-release // ignores cancellation, and holds the only slot
			}
			return server.SubscriptionGrant{Until: time.Now().Add(10 * time.Second)}, nil
		}}
		r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth, AuthorizationTimeout: time.Hour}, func(r *taskRig, o *server.Options) {
			o.HandlerConcurrency = 2
		})
		o := taskOrigin(t, "build", `{"n":1}`)
		r.set(func() {
			r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
				return taskSnap(t, task.Params{ID: rc.TaskID, Origin: o, Status: task.Working}), true, nil
			}
		})
		defer close(release)
		hog, _ := listen(t, r.srv, "1", nil, "tid-hog")
		time.Sleep(5600 * time.Millisecond) // the hog's renewal holds the slot
		start := time.Now()
		late, _ := listen(t, r.srv, "2", nil, "tid-late") // grant until start+10 s
		late.expectEnd(t, "end")
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("the waiting renewal ended its listen after %v, want the grant's 10 s", d)
		}
		r.srv.Close()
		hog.cancel()
	})
}

// stuckManager makes FindTask of one task block, ignoring cancellation,
// until released, and tracks the concurrent lookups of each tenant.
type stuckManager struct {
	r       *taskRig
	id      string
	block   atomic.Bool
	release chan struct{}
	entered chan struct{}
	once    sync.Once

	mu       sync.Mutex
	inFlight map[string]int
	peak     map[string]int
}

func newStuckManager(r *taskRig, id string) *stuckManager {
	m := &stuckManager{r: r, id: id, release: make(chan struct{}), entered: make(chan struct{}, 16),
		inFlight: map[string]int{}, peak: map[string]int{}}
	r.set(func() { r.mgr.find = m.find })
	return m
}

func (m *stuckManager) find(rc task.RequestContext) (task.Task, bool, error) {
	m.mu.Lock()
	m.inFlight[rc.Tenant]++
	m.peak[rc.Tenant] = max(m.peak[rc.Tenant], m.inFlight[rc.Tenant])
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inFlight[rc.Tenant]--
		m.mu.Unlock()
	}()
	if rc.TaskID == m.id && m.block.Load() {
		m.entered <- struct{}{}
		<-m.release
	}
	return m.r.mem.FindTask(context.Background(), rc)
}

func (m *stuckManager) unblock() { m.once.Do(func() { close(m.release) }) }

// TestListenStuckLookupKeepsOnlyItsSlot: a manager lookup that ignores
// cancellation keeps its own subscription's projection slot until it
// returns (no second lookup for that subscription meanwhile, not even its
// retry), but the shared maintenance slot is given back at the projection
// deadline, so another subscription progresses even with a single shared
// slot. Once the lookup returns, the retry projects the stuck task.
func TestListenStuckLookupKeepsOnlyItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newListenRig(t, &server.SubscriptionOptions{AuthorizationTimeout: time.Second}, func(_ *taskRig, o *server.Options) {
			o.HandlerConcurrency = 2 // one maintenance slot
		})
		stuck := r.createTask(t, `{"n":1}`, asAlice)
		y := r.createTask(t, `{"n":2}`, asAlice)
		z := r.createTask(t, `{"n":3}`, asBob)
		m := newStuckManager(r, stuck)
		defer m.unblock()
		a, _ := listen(t, r.srv, "1", asAlice, stuck, y)
		b, _ := listen(t, r.srv, "2", asBob, z)
		m.block.Store(true)
		r.takeCalls()

		taskMust(t)(r.mem.MarkWorking(stuck, "one"))
		<-m.entered
		taskMust(t)(r.mem.MarkWorking(y, "one"))
		time.Sleep(1500 * time.Millisecond) // past the projection deadline
		synctest.Wait()
		taskMust(t)(r.mem.MarkWorking(z, "one"))
		b.expect(t, note(z, "working", "one"))
		synctest.Wait()
		diffCalls(t, "while stuck", taskCalls{Find: 2}, r.takeCalls()) // the stuck one and z; not y
		time.Sleep(time.Minute)
		synctest.Wait()
		diffCalls(t, "a minute later", taskCalls{}, r.takeCalls())

		m.unblock()
		// y, which waited behind the stuck lookup, then the stuck task's
		// retry, which no longer waits.
		a.expect(t, note(y, "working", "one"), note(stuck, "working", "one"))
		m.mu.Lock()
		if m.peak["alice"] != 1 {
			t.Errorf("alice's subscription ran %d lookups at once", m.peak["alice"])
		}
		m.mu.Unlock()
		r.srv.Close()
		a.expectEnd(t, "end")
		b.expectEnd(t, "end")
	})
}

// TestListenEndsWhileLookupStuck: Server.Close, a client disconnect and
// MaxLifetime each end a listen whose projection waits behind a stuck
// lookup, without waiting for the lookup to return, and release its
// capacity.
func TestListenEndsWhileLookupStuck(t *testing.T) {
	for _, how := range []string{"Server.Close", "disconnect", "MaxLifetime"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, _ := newListenRig(t, &server.SubscriptionOptions{
					AuthorizationTimeout: time.Second, MaxSubscriptions: 1, MaxLifetime: time.Hour,
				}, nil)
				stuck := r.createTask(t, `{"n":1}`, nil)
				y := r.createTask(t, `{"n":2}`, nil)
				m := newStuckManager(r, stuck)
				defer m.unblock()
				a, _ := listen(t, r.srv, "1", nil, stuck, y)
				m.block.Store(true)
				taskMust(t)(r.mem.MarkWorking(stuck, "one"))
				<-m.entered
				taskMust(t)(r.mem.MarkWorking(y, "one"))
				time.Sleep(1500 * time.Millisecond)
				synctest.Wait()
				r.obs.take()
				switch how {
				case "Server.Close":
					r.srv.Close()
					a.expectEnd(t, "end")
					diffLifecycle(t, r, "finish subscriptions/listen complete")
				case "disconnect":
					a.close(t)
					diffLifecycle(t, r, "finish subscriptions/listen canceled")
					b, _ := listen(t, r.srv, "2", nil, y) // the capacity of one is free
					b.close(t)
				case "MaxLifetime":
					time.Sleep(time.Hour)
					a.expectEnd(t, "end")
					diffLifecycle(t, r, "finish subscriptions/listen complete")
				}
			})
		})
	}
}

// TestListenStorm: 256 IDs on one subscription, each changing several
// times: every ID's first notification comes in the order of the first
// hints, every ID converges to its final state without going back, and the
// subscription never runs two lookups at once.
func TestListenStorm(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	ids := make([]string, server.MaxListenTaskIDs)
	for i := range ids {
		ids[i] = r.createTask(t, fmt.Sprintf(`{"n":%d}`, i), nil)
	}
	var inFlight, peak, lookups atomic.Int32
	r.set(func() {
		r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			lookups.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			return r.mem.FindTask(context.Background(), rc)
		}
	})
	lc, acked := listen(t, r.srv, "7", nil, ids...)
	if !slices.Equal(acked, ids) {
		t.Fatalf("acknowledged %d of %d IDs", len(acked), len(ids))
	}
	lookups.Store(0)
	const steps = 4
	driven := make(chan error, 1)
	go func() { // the driver: every ID changes steps times, then completes
		var err error
		for step := 1; step <= steps+1 && err == nil; step++ {
			for i, id := range ids {
				if step <= steps {
					_, err = r.mem.MarkWorking(id, fmt.Sprint("step ", step))
				} else {
					_, err = r.mem.Complete(id, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"sum":3}`)}, "done")
				}
				if err != nil {
					break
				}
				if i%16 == 0 {
					runtime.Gosched() // let the projection interleave with the storm
				}
			}
		}
		driven <- err
	}()

	var firsts []string
	lastStep := map[string]int{}
	count := map[string]int{}
	for completed := 0; completed < len(ids); {
		m := lc.next(t)
		id := m.Params.TaskID
		if count[id] == 0 {
			firsts = append(firsts, id)
		}
		count[id]++
		step := steps + 1
		switch {
		case m.Params.Status == "completed":
			completed++
		case m.Params.Status == "working":
			fmt.Sscanf(m.Params.StatusMessage, "step %d", &step)
		default:
			t.Fatalf("unexpected %s", m.raw)
		}
		if step < lastStep[id] || lastStep[id] == steps+1 {
			t.Errorf("%s went from step %d to %s", id, lastStep[id], m)
		}
		lastStep[id] = step
	}
	if err := <-driven; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids, firsts); diff != "" {
		t.Errorf("first-event order (-want +got):\n%s", diff)
	}
	for _, id := range ids {
		if count[id] > steps+1 {
			t.Errorf("%s: %d notifications for %d changes", id, count[id], steps+1)
		}
	}
	if p := peak.Load(); p != 1 {
		t.Errorf("the subscription ran %d lookups at once", p)
	}
	if n := int(lookups.Load()); n > len(ids)*(steps+1) {
		t.Errorf("%d lookups for %d changes", n, len(ids)*(steps+1))
	}
	r.srv.Close()
	lc.expectEnd(t, "end")
	t.Logf("%d notifications, %d lookups for %d changes", lc.n-2, lookups.Load(), len(ids)*(steps+1))
}

// TestListenOversizedResultSuppressed: a completed result beyond
// MaxResultBytes is never projected, and the stream carries on with the
// other tasks, as polling fails it alone.
func TestListenOversizedResultSuppressed(t *testing.T) {
	r, _ := newListenRig(t, nil, func(_ *taskRig, o *server.Options) { o.MaxResultBytes = 64 << 10 })
	big := r.createTask(t, `{"n":1}`, nil)
	w := r.createTask(t, `{"n":2}`, nil)
	lc, _ := listen(t, r.srv, "7", nil, big, w)
	taskMust(t)(r.mem.Complete(big, &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 100<<10)}},
		StructuredContent: json.RawMessage(`{"sum":1}`),
	}, "done"))
	taskMust(t)(r.mem.MarkWorking(w, "carrying on"))
	lc.expect(t, note(w, "working", "carrying on"))
	r.takeCalls()
	res := r.do(t, taskReq("tasks/get", big, taskCaps, "", nil))
	r.expect(t, res, 200, taskInternal, taskCalls{Admit: 1, Find: 1, Policy: 1, Sanitize: 1})
	r.srv.Close()
	lc.expectEnd(t, "end")
}

// listenObserver reports the outcome of every listen that finishes.
type listenObserver struct {
	*taskObserver
	finished chan server.Outcome
}

func (o *listenObserver) RequestFinished(ctx context.Context, info server.RequestInfo, out server.Outcome, d time.Duration) {
	o.taskObserver.RequestFinished(ctx, info, out, d)
	if info.Method == mcp.MethodSubscriptionsListen {
		o.finished <- out
	}
}

// TestListenSlowSubscriberClosesAlone, over real loopback HTTP: a client
// that opens a listen and never reads its socket is closed once a write
// waits longer than WriteTimeout; a reading listener of some of the same
// tasks keeps receiving notifications and tasks/get keeps answering.
//
// The tasks both follow complete last, once the slow stream is stuck, with
// small results: the reading stream then never holds more than its socket
// buffers, so however slowly a loaded machine runs the reader, none of its
// writes waits, and only the stream that does not read can meet
// WriteTimeout.
func TestListenSlowSubscriberClosesAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("moves tens of megabytes over loopback")
	}
	finished := make(chan server.Outcome, 16)
	authorized := make(chan struct{}, 16)
	auth := &testAuthorizer{fn: func(context.Context, *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
		authorized <- struct{}{}
		return server.SubscriptionGrant{Until: time.Now().Add(time.Hour)}, nil
	}}
	// Hundreds of lookups of large results queue for the maintenance slots:
	// on a loaded machine some would wait past the default 5 s
	// AuthorizationTimeout, and a timed-out lookup is retried and, failing
	// again, ends the listen, which is not what this test is about.
	subs := &server.SubscriptionOptions{Authorizer: auth, WriteTimeout: 2 * time.Second, AuthorizationTimeout: 2 * time.Minute}
	r, _ := newListenRig(t, subs, func(r *taskRig, o *server.Options) {
		o.Observer = &listenObserver{taskObserver: r.obs, finished: finished}
		o.KeepAliveInterval = time.Hour
	})
	ids := make([]string, 256)
	for i := range ids {
		ids[i] = r.createTask(t, `{"n":1}`, nil)
	}
	w := r.createTask(t, `{"n":2}`, nil)
	ts := httptest.NewServer(r.srv)
	defer ts.Close()
	defer r.srv.Close() // before ts.Close, which waits for the reading listener
	addr := ts.Listener.Addr().String()
	within := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(2 * time.Minute):
			t.Fatalf("timed out waiting for %s", what)
		}
	}

	// The slow subscriber: a raw connection that sends its listen and never
	// reads. (Its receive buffer does not grow while nothing is read; a
	// tiny fixed one would make the final drain below crawl.)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := listenBody("1", idsFilter(ids...), taskCaps)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	within("the slow listener's authorization", authorized)

	// The reading subscriber follows the last tasks, shared with the slow
	// one, and w.
	shared := ids[len(ids)-32:]
	following := append(slices.Clone(shared), w)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(listenBody("2", idsFilter(following...), taskCaps)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", mcp.MethodSubscriptionsListen)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("reading listen: HTTP %d %s", resp.StatusCode, b)
	}
	within("the reading listener's authorization", authorized)
	allCompleted, sawW, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var (
		readErr error
		got     atomic.Int32 // completed notifications read
	)
	go func() { // ends with the response body
		defer close(ended)
		br := bufio.NewReaderSize(resp.Body, 128<<10)
		completed := map[string]bool{}
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = err
				}
				return
			}
			data, ok := strings.CutPrefix(string(line), "data: ")
			if !ok {
				continue
			}
			var m lmsg
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				readErr = err
				return
			}
			switch {
			case m.Params.TaskID == w:
				close(sawW)
			case m.Params.Status == "completed" && !completed[m.Params.TaskID]:
				completed[m.Params.TaskID] = true
				got.Store(int32(len(completed)))
				if len(completed) == len(shared) {
					close(allCompleted)
				}
			}
		}
	}()

	// Results, for the tasks only the slow subscriber follows, large
	// enough that its stream carries at least twice what loopback TCP can
	// buffer (the sender's maximum send buffer plus the receiver's initial
	// receive buffer, which does not grow unread).
	alone := ids[:len(ids)-len(shared)]
	big := strings.Repeat("x", max(32<<10, 2*loopbackBuffering()/len(alone)))
	for i, id := range ids {
		text := big
		if i >= len(alone) {
			text = "small"
		}
		taskMust(t)(r.mem.Complete(id, &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: json.RawMessage(`{"sum":1}`),
		}, "done"))
	}
	// Polling answers while the slow stream is stuck (a sample: a 64 KiB
	// result costs milliseconds of encoding under the race detector).
	for i := 0; i < len(ids); i += 16 {
		id := ids[i]
		req := taskReq("tasks/get", id, taskCaps, "", nil)
		req.RequestURI = ""
		req.URL, _ = req.URL.Parse(ts.URL + "/mcp")
		req.Host = addr
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), `"status":"completed"`) {
			t.Fatalf("tasks/get: HTTP %d %.200s", res.StatusCode, b)
		}
	}
	select {
	case <-allCompleted:
	case <-ended:
		t.Fatalf("the reading stream ended before every completed notification (read error %v, outcomes %v)", readErr, drainOutcomes(finished))
	case <-time.After(2 * time.Minute):
		t.Fatalf("timed out waiting for every completed notification on the reading stream: %d of %d (outcomes %v)",
			got.Load(), len(shared), drainOutcomes(finished))
	}
	select {
	case out := <-finished:
		if out != server.OutcomeCanceled {
			t.Errorf("the slow listen finished %s, want canceled", out)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the slow listen was not closed")
	}
	// The server closed the slow connection: draining it reaches its end.
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, conn); err != nil && os.IsTimeout(err) {
		t.Errorf("the slow connection is still open: %v", err)
	}
	// The reading listener is unaffected.
	taskMust(t)(r.mem.MarkWorking(w, "after the slow one left"))
	within("a notification after the slow listener closed", sawW)
	select {
	case out := <-finished:
		t.Fatalf("another listen finished (%s)", out)
	default:
	}
	r.srv.Close()
	within("the reading stream's end", ended)
	if readErr != nil {
		t.Errorf("reading stream: %v", readErr)
	}
	if out := <-finished; out != server.OutcomeComplete {
		t.Errorf("the reading listen finished %s", out)
	}
}

// drainOutcomes returns the outcomes waiting in finished.
func drainOutcomes(finished <-chan server.Outcome) []server.Outcome {
	var outs []server.Outcome
	for {
		select {
		case o := <-finished:
			outs = append(outs, o)
		default:
			return outs
		}
	}
}

// loopbackBuffering estimates the bytes a TCP connection can hold between a
// writer and a reader that never reads, from the Linux sysctls (4 MiB
// when they cannot be read).
func loopbackBuffering() int {
	field := func(path string, i int) int {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		f := strings.Fields(string(b))
		if len(f) <= i {
			return 0
		}
		var n int
		fmt.Sscan(f[i], &n)
		return n
	}
	n := field("/proc/sys/net/ipv4/tcp_wmem", 2) + field("/proc/sys/net/ipv4/tcp_rmem", 1)
	if n == 0 {
		return 4 << 20
	}
	return n
}

// TestListenRenewalKeepsIDsWhenLookupsFail: a renewal whose lookups fail
// (a storage outage) keeps following the task, because a failed lookup says
// nothing about it; the next change is still delivered.
func TestListenRenewalKeepsIDsWhenLookupsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := leaseAuthorizer(10*time.Second, func(*server.SubscriptionRequest) ([]string, error) { return nil, nil })
		r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth}, nil)
		a := r.createTask(t, `{"n":1}`, nil)
		lc, acked := listen(t, r.srv, "9", nil, a)
		if len(acked) != 1 {
			t.Fatalf("acknowledged %q", acked)
		}
		// The store is down while the renewal (at 5 to 5.5 s) reconciles.
		r.mu.Lock()
		r.mgr.find = func(task.RequestContext) (task.Task, bool, error) {
			return task.Task{}, false, errors.New("connection refused")
		}
		r.mu.Unlock()
		time.Sleep(6 * time.Second)
		synctest.Wait()
		r.mu.Lock()
		r.mgr.find = nil // the store is back
		r.mu.Unlock()
		taskMust(t)(r.mem.MarkWorking(a, "after the outage"))
		lc.expect(t, note(a, "working", "after the outage"))
		r.srv.Close()
		lc.expectEnd(t, "end")
	})
}

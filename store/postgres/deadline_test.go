package postgres

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/faultnet"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/sessiontest"
	"github.com/taskwire/taskwire/task"
)

// proxied opens a store whose connections, the LISTEN session's included,
// pass through a loopback proxy that the test can freeze.
func proxied(t *testing.T, opts Options) (*Store, *faultnet.Proxy) {
	t.Helper()
	u, err := url.Parse(storeURL())
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultnet.Listen(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	opts.URL, opts.Logger = u.String(), quiet
	if opts.Schema == "" {
		opts.Schema = newSchema(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p
}

// noLaterThan runs fn with a context that has no deadline of its own, as
// a caller that trusts the store to bound its calls, and fails the test if
// fn has not returned by the limit.
func noLaterThan(t *testing.T, limit time.Duration, what string, fn func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		cancel()
		<-done
		t.Fatalf("%s still running after %v with the database unreachable", what, limit)
		return nil
	}
}

// TestTimeoutFrozenNetwork freezes the network between the store and the
// database, keeping the connections open: every call, single statements
// and transactions, and connection attempts alike, fails within the
// store's Timeout instead of waiting for the caller's deadline, and the
// store recovers once bytes flow again.
func TestTimeoutFrozenNetwork(t *testing.T) {
	t.Parallel()
	s, p := proxied(t, Options{Timeout: 300 * time.Millisecond, MaxConns: 4})
	ctx := ctxT(t)
	held, err := s.Enqueue(ctx, creation(t, "acme", "tool", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ops := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"FindTask", func(ctx context.Context) error {
			_, _, err := s.FindTask(ctx, rc(held.ID(), "acme"))
			return err
		}},
		{"Enqueue", func(ctx context.Context) error {
			_, err := s.Enqueue(ctx, creation(t, "acme", "tool", `{}`), backend.EnqueueOptions{IdempotencyKey: "k"})
			return err
		}},
		{"Claim", func(ctx context.Context) error {
			_, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute})
			return err
		}},
		{"RequestCancel", func(ctx context.Context) error { return s.RequestCancel(ctx, rc(held.ID(), "acme")) }},
		{"RequestInput", func(ctx context.Context) error {
			return s.Jobs().RequestInput(ctx, backend.Lease{TaskID: held.ID(), Attempt: 1},
				mcp.InputRequests{"k": formRequest("q")}, "")
		}},
		{"RescueExpired", func(ctx context.Context) error {
			_, err := s.Jobs().RescueExpired(ctx, backend.RescueParams{Limit: 10, MaxInterruptedRuns: 1})
			return err
		}},
		{"ListTasks", func(ctx context.Context) error {
			_, err := s.ListTasks(ctx, task.ListQuery{Request: rc("", "acme"), Limit: 10})
			return err
		}},
		{"Sessions.Create", func(ctx context.Context) error {
			return s.Sessions().Create(ctx, sessiontest.Record("frozen", "alice"), session.Limits{PerOwner: 5}, sessiontest.Base)
		}},
		{"Sessions.Load", func(ctx context.Context) error {
			_, err := s.Sessions().Load(ctx, sessiontest.Key("frozen"), sessiontest.Base)
			return err
		}},
		{"Sessions.Touch", func(ctx context.Context) error {
			return s.Sessions().Touch(ctx, sessiontest.Key("frozen"), sessiontest.Base)
		}},
		{"Sessions.Sweep", func(ctx context.Context) error {
			_, err := s.Sessions().Sweep(ctx, sessiontest.Base, 10)
			return err
		}},
	}
	p.Freeze()
	// Twice: the first round meets the pool's open connections, the
	// second has to connect anew.
	for round := range 2 {
		for _, op := range ops {
			if err := noLaterThan(t, 20*time.Second, op.name, op.fn); err == nil {
				t.Errorf("round %d: %s succeeded with the network frozen", round, op.name)
			}
		}
	}
	p.Unfreeze()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, found, err := s.FindTask(ctx, rc(held.ID(), "acme"))
		if err == nil && found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("FindTask after the network healed: found %v, %v", found, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTimeoutValidated checks Options.Timeout's range.
func TestTimeoutValidated(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		ok      bool
	}{{0, true}, {time.Second, true}, {-time.Second, false}, {1500 * time.Microsecond, false}} {
		o := Options{URL: "postgres://x@127.0.0.1/db", Timeout: tc.timeout}
		if err := o.setDefaults(); (err == nil) != tc.ok {
			t.Errorf("Timeout %v: %v, want ok %v", tc.timeout, err, tc.ok)
		}
	}
	o := Options{URL: "postgres://x@127.0.0.1/db"}
	if err := o.setDefaults(); err != nil || o.Timeout != DefaultTimeout {
		t.Errorf("zero Timeout became %v (%v), want %v", o.Timeout, err, DefaultTimeout)
	}
}

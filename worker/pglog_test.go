package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/worker"
)

// signalLog is a log sink that wakes a waiter at every line.
type signalLog struct {
	mu   sync.Mutex
	b    strings.Builder
	wake chan struct{}
}

func (l *signalLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *signalLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStoreErrorsLoggedWithSQLSTATE breaks a real PostgreSQL schema under
// a running worker: its log names the cause, with the SQLSTATE, rather
// than the error's Go type.
func TestStoreErrorsLoggedWithSQLSTATE(t *testing.T) {
	raw := pgtest.URL(t)
	schema := pgtest.Schema(t, raw, "twlog_")
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Options{URL: raw, Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	defer st.Close()
	admin, err := pgx.Connect(ctx, raw)
	must(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `DROP TABLE `+pgx.Identifier{schema, "jobs"}.Sanitize()+` CASCADE`)
	must(t, err)

	logs := &signalLog{wake: make(chan struct{}, 1)}
	rt, err := worker.New(worker.Options{Store: st.Jobs(), PollInterval: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	must(t, err)
	must(t, worker.AddHandler(rt, "noop", func(context.Context, *worker.Job, struct{}) (struct{}, error) {
		return struct{}{}, nil
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	defer func() {
		stop()
		must(t, <-done)
	}()
	const want = `msg="worker: claim failed"`
	deadline := time.After(20 * time.Second)
	for !strings.Contains(logs.String(), want) {
		select {
		case <-logs.wake:
		case <-deadline:
			t.Fatalf("no claim failure logged:\n%s", logs.String())
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, want) {
			continue
		}
		if !strings.Contains(line, "does not exist (SQLSTATE 42P01)") || strings.Contains(line, "error of type") {
			t.Errorf("claim failure logged without its cause: %s", line)
		}
		break
	}
}

package worker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunTimeout: on every backend, a run that outlives its kind's run
// timeout has its context ended with a cause naming the timeout, and its
// error counts as a timeout failure: retried while attempts remain (the
// next run completes), failing the task once they are used, with the
// category in the history and the log.
func TestRunTimeout(t *testing.T) {
	eachBackend(t, func(t *testing.T, st realStore) {
		logs := &lockedBuffer{}
		r := newRig(t, st, worker.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		var mu sync.Mutex
		var causes []error
		must(t, worker.AddHandler(r.rt, "slow", func(ctx context.Context, job *worker.Job, in struct {
			Hang int `json:"hang"`
		}) (crawlOut, error) {
			if job.Attempt() > int64(in.Hang) {
				return crawlOut{Pages: 1}, nil
			}
			<-ctx.Done()
			mu.Lock()
			causes = append(causes, context.Cause(ctx))
			mu.Unlock()
			return crawlOut{}, ctx.Err()
		}, worker.WithRunTimeout(50*time.Millisecond)))
		r.start(t)
		retried := r.enqueue(t, "slow", `{"hang":1}`, backend.EnqueueOptions{MaxAttempts: 3})
		failed := r.enqueue(t, "slow", `{"hang":5}`, backend.EnqueueOptions{MaxAttempts: 2})
		if tk := r.wait(t, retried, nil); tk.Status() != task.Completed {
			t.Errorf("retried task: %s", tk.Status())
		}
		if tk := r.wait(t, failed, nil); tk.Status() != task.Failed || tk.Error().Message != backend.ExhaustedError().Message {
			t.Errorf("failed task: %s %v", tk.Status(), tk.Error())
		}
		mu.Lock()
		for _, c := range causes {
			if !errors.Is(c, worker.ErrRunTimeout) || !strings.Contains(c.Error(), "50ms") {
				t.Errorf("cause %v, want ErrRunTimeout naming 50ms", c)
			}
		}
		if len(causes) != 3 {
			t.Errorf("%d runs timed out, want 3", len(causes))
		}
		mu.Unlock()
		categories := func(id string) []string {
			var out []string
			for _, e := range r.history(t, id).Events {
				if e.Category != "" {
					out = append(out, string(e.Kind)+":"+string(e.Category))
				}
			}
			return out
		}
		if got := strings.Join(categories(retried), " "); got != "retry:timeout" {
			t.Errorf("retried task's categories: %q", got)
		}
		if got := strings.Join(categories(failed), " "); got != "retry:timeout failed:timeout" {
			t.Errorf("failed task's categories: %q", got)
		}
		if l := logs.String(); !strings.Contains(l, "category=timeout") || !strings.Contains(l, "run timeout of 50ms passed") {
			t.Errorf("log lacks the timeout category and cause:\n%s", l)
		}
	})
}

// TestRunTimeoutBounds: a negative run timeout, or one above
// MaxRunTimeout, fails the registration; zero is none.
func TestRunTimeoutBounds(t *testing.T) {
	rt, err := worker.New(worker.Options{Store: newMemoryJobs(t)})
	must(t, err)
	raw := func(context.Context, *worker.Job, struct{}) (crawlOut, error) { return crawlOut{}, nil }
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{{-time.Second, false}, {worker.MaxRunTimeout + 1, false}, {0, true}, {worker.MaxRunTimeout, true}} {
		err := worker.AddHandler(rt, "k"+tc.d.String(), raw, worker.WithRunTimeout(tc.d))
		if (err == nil) != tc.ok {
			t.Errorf("WithRunTimeout(%v): %v", tc.d, err)
		}
	}
}

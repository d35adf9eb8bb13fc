package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// e2eTarget is a service the end-to-end load generator drives over HTTP:
// the taskwire server of pg-e2e and sqlite-e2e, or the net/http + River
// service of river-e2e.
type e2eTarget interface {
	// create creates the task of n and returns its ID and whether it was
	// already completed when the service answered.
	create(ctx context.Context, n int) (id string, completed bool, err error)
	// get reads the task: whether it has completed with n's result. It
	// fails when the task is in any state but working or completed.
	get(ctx context.Context, id string, n int) (bool, error)
}

// awaitTask polls the task every interval until it has completed; the
// first poll is immediate when the task was created completed. Every poll
// counts in polls.
func awaitTask(ctx context.Context, t e2eTarget, id string, n int, completed bool, interval time.Duration, polls *atomic.Int64) error {
	first := interval
	if completed {
		first = 0
	}
	tm := time.NewTimer(first)
	defer tm.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("task %d not completed: %w", n, ctx.Err())
		case <-tm.C:
		}
		polls.Add(1)
		done, err := t.get(ctx, id, n)
		if err != nil || done {
			return err
		}
		tm.Reset(interval)
	}
}

// verifyE2E creates the task of n=0 and awaits it, before any load, and
// returns its ID and how long it took to complete.
func verifyE2E(ctx context.Context, cfg config, t e2eTarget) (string, time.Duration, error) {
	var polls atomic.Int64
	t0 := time.Now()
	id, completed, err := t.create(ctx, 0)
	if err != nil {
		return "", 0, fmt.Errorf("verification before load: %w", err)
	}
	if err := awaitTask(ctx, t, id, 0, completed, cfg.E2EPoll, &polls); err != nil {
		return "", 0, fmt.Errorf("verification before load: %w", err)
	}
	return id, time.Since(t0), nil
}

// newE2EHTTPClient returns the keep-alive HTTP client of the e2e clients:
// no proxy, idle connections for every client, a 30 s bound on every
// request. The caller closes its idle connections when done.
func newE2EHTTPClient(cfg config) *http.Client {
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 2 * cfg.E2EClients, MaxIdleConnsPerHost: 2 * cfg.E2EClients, IdleConnTimeout: time.Minute}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// e2eRun is what one end-to-end load measured.
type e2eRun struct {
	clients     int
	poll        time.Duration
	lats        []time.Duration // create → completed, sorted
	creates     []time.Duration // the create request, sorted
	elapsed     time.Duration
	polls       int64 // get requests
	createdDone int64 // creates answered with the task already completed
	cpu         cpuUse
}

// runE2ELoad has -e2e-clients clients create -e2e-tasks tasks in all, each
// client creating one task and polling it every -e2e-poll until it has
// completed before it creates the next. It fails on the first error of any
// client or when not every task was seen completed. serverPID is the
// service's process, whose CPU time is measured with this process's and
// PostgreSQL's.
func runE2ELoad(ctx context.Context, cfg config, t e2eTarget, serverPID int) (e2eRun, error) {
	var polls, next, createdDone atomic.Int64
	lats := make([][]time.Duration, cfg.E2EClients)
	creates := make([][]time.Duration, cfg.E2EClients)
	errs := make([]error, cfg.E2EClients)
	var wg sync.WaitGroup
	cpu0 := takeCPU(serverPID)
	start := time.Now()
	for k := range cfg.E2EClients {
		wg.Go(func() {
			for {
				n := int(next.Add(1))
				if n > cfg.E2ETasks {
					return
				}
				t0 := time.Now()
				id, completed, err := t.create(ctx, n)
				if err != nil {
					errs[k] = err
					return
				}
				creates[k] = append(creates[k], time.Since(t0))
				if completed {
					createdDone.Add(1)
				}
				if err := awaitTask(ctx, t, id, n, completed, cfg.E2EPoll, &polls); err != nil {
					errs[k] = err
					return
				}
				lats[k] = append(lats[k], time.Since(t0))
			}
		})
	}
	wg.Wait()
	r := e2eRun{clients: cfg.E2EClients, poll: cfg.E2EPoll, elapsed: time.Since(start),
		polls: polls.Load(), createdDone: createdDone.Load()}
	r.cpu = takeCPU(serverPID).since(cpu0)
	for _, err := range errs {
		if err != nil {
			return e2eRun{}, err
		}
	}
	r.lats, r.creates = slices.Concat(lats...), slices.Concat(creates...)
	slices.Sort(r.lats)
	slices.Sort(r.creates)
	if len(r.lats) != cfg.E2ETasks {
		return e2eRun{}, fmt.Errorf("%d of %d tasks completed", len(r.lats), cfg.E2ETasks)
	}
	return r, nil
}

// rate is completed tasks per second.
func (r e2eRun) rate() float64 { return float64(len(r.lats)) / r.elapsed.Seconds() }

// p returns the q-th percentile of the sorted durations s.
func (r e2eRun) p(s []time.Duration, q int) time.Duration { return s[len(s)*q/100] }

// latencyNote is the settings column of the run's figure: it names the
// p99 that "durablebench compare" reads.
func (r e2eRun) latencyNote() string {
	return fmt.Sprintf("%d clients, poll %s; latency p50 %s, p99 %s", r.clients, r.poll, fmtDur(r.p(r.lats, 50)), fmtDur(r.p(r.lats, 99)))
}

// report prints the run: rate and latencies, the HTTP requests made
// (createName and getName name the two requests), and the CPU used.
func (r e2eRun) report(out io.Writer, createName, getName string) {
	n := len(r.lats)
	fmt.Fprintf(out, "   %d clients, %d tasks, poll every %s: %.0f completed tasks/s in %.2fs; create→completed p50 %s, p99 %s; %s p50 %s, p99 %s\n",
		r.clients, n, r.poll, r.rate(), r.elapsed.Seconds(), fmtDur(r.p(r.lats, 50)), fmtDur(r.p(r.lats, 99)),
		createName, fmtDur(r.p(r.creates, 50)), fmtDur(r.p(r.creates, 99)))
	fmt.Fprintf(out, "   HTTP: %d %s (%d answered with the task already completed) + %d %s (%.1f polls per task), %.0f req/s\n",
		n, createName, r.createdDone, r.polls, getName, float64(r.polls)/float64(n), float64(int64(n)+r.polls)/r.elapsed.Seconds())
	fmt.Fprintf(out, "   %s\n", r.cpu)
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
)

// TestPostgresRestart restarts PostgreSQL under load. Node 1 serves with
// workers, node 2 without (it hears of task changes only through the
// database). While a few clients keep creating, reading and computing
// against both, the server is shut down (fast mode), held down for longer
// than a worker lease, and started again. Throughout, every response is a
// well-formed JSON-RPC response, inline tools keep working, and no node exits
// or panics. After the restart, without any intervention, new tasks complete,
// every task acknowledged during the load completes, and listeners on node
// 2, opened before and after the restart, receive their terminal
// notifications.
func TestPostgresRestart(t *testing.T) {
	pg := startPrivatePostgres(t)
	common := []string{"--store", pg.URL(), "--schema", "e2e_restart", "--lease", "2s", "--log-level", "warn", "--shutdown-grace", "2s"}
	n1 := startProc(t, "node-1", append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "2", "--reports-dir", t.TempDir()}, common...)...)
	n2 := startProc(t, "node-2", append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0", "--reports-dir", t.TempDir()}, common...)...)
	c1, c2 := newClient(t, n1.url, "load"), newClient(t, n2.url, "load")

	// A task whose run spans the outage, followed from node 2.
	span := c1.createReport(t, map[string]any{"accountId": "span", "rows": 1, "seconds": 4})
	spanListener := c2.listen(t, span)
	if acc := spanListener.awaitAck(t); len(acc) != 1 || acc[0] != span {
		t.Fatalf("node 2 acknowledged %v, want [%s]", acc, span)
	}

	workers := 3
	if testing.Short() {
		workers = 2
	}
	ld := startLoad(t, []*client{c1, c2}, workers)
	poll(t, 20*time.Second, 20*time.Millisecond, func() string { return "the load made no progress: " + ld.summary() }, func() bool {
		return ld.count("before ok") >= 30
	})

	// The restart: down for longer than a lease, so that running jobs lose
	// theirs, and until the load has met the outage.
	outage := time.Now()
	ld.setPhase("outage")
	pg.stop()
	poll(t, 20*time.Second, 20*time.Millisecond, func() string { return "the load saw no outage: " + ld.summary() }, func() bool {
		return time.Since(outage) >= 2500*time.Millisecond && ld.count("outage error") >= 10
	})
	pg.start(false)
	restarted := time.Now()
	ld.setPhase("recovery")
	t.Logf("PostgreSQL was down for %v", restarted.Sub(outage).Round(time.Millisecond))
	n1.checkHealthy(t)
	n2.checkHealthy(t)

	// New tasks complete again, created on one node and read on the other.
	var first string
	poll(t, 30*time.Second, 100*time.Millisecond, func() string { return "no task could be created after the restart: " + ld.summary() }, func() bool {
		id, err := c2.tryCreateReport(context.Background(), map[string]any{"accountId": "after", "rows": 2, "seconds": 0})
		first = id
		return err == nil
	})
	report(t, c1.awaitTerminal(t, first, 30*time.Second))
	t.Logf("a new task completed %v after the restart", time.Since(restarted).Round(time.Millisecond))

	// A listener opened after the restart hears of a task node 1 runs.
	fresh := c1.createReport(t, map[string]any{"accountId": "fresh", "rows": 3, "seconds": 0.5})
	freshListener := c2.listen(t, fresh)
	if acc := freshListener.awaitAck(t); len(acc) != 1 || acc[0] != fresh {
		t.Fatalf("node 2 acknowledged %v, want [%s]", acc, fresh)
	}
	if n := freshListener.awaitTerminal(t, fresh, 30*time.Second); n.Status != mcp.TaskCompleted {
		t.Errorf("fresh task notified %q", n.Status)
	}
	// The listener opened before the restart hears of the task that
	// spanned it.
	if n := spanListener.awaitTerminal(t, span, 30*time.Second); n.Status != mcp.TaskCompleted {
		t.Errorf("spanning task notified %q", n.Status)
	}
	t.Logf("both listeners notified %v after the restart", time.Since(restarted).Round(time.Millisecond))

	poll(t, 30*time.Second, 20*time.Millisecond, func() string { return "the load did not recover: " + ld.summary() }, func() bool {
		return ld.count("recovery ok") >= 20
	})
	ld.finish()
	t.Logf("load: %s", ld.summary())
	for _, p := range ld.problems {
		t.Errorf("load: %s", p)
	}
	t.Logf("slowest requests: %v", ld.slowest)
	if d := ld.slowest["outage"]; d > 5*time.Second {
		t.Errorf("a request during the outage took %v; nodes must answer promptly", d)
	}
	if n := ld.count("inline failed"); n > 0 {
		t.Errorf("%d inline tool calls failed; they do not need the database", n)
	}

	// Every acknowledged task completes; a creation that failed is retried
	// with its idempotency key and completes too.
	for _, lt := range ld.failed {
		id, err := c1.tryCreateReport(context.Background(), lt.args)
		if err != nil {
			t.Fatalf("retrying %s after the restart: %v", lt.key, err)
		}
		ld.acked = append(ld.acked, loadTask{key: lt.key, args: lt.args, id: id})
	}
	for _, lt := range ld.acked {
		g := c2.awaitTerminal(t, lt.id, 30*time.Second)
		if r := report(t, g); r.AccountID != lt.args["accountId"] {
			t.Errorf("task %s: report %+v", lt.id, r)
		}
	}
	t.Logf("%d acknowledged and %d retried load tasks completed", len(ld.acked)-len(ld.failed), len(ld.failed))
	n1.checkHealthy(t)
	n2.checkHealthy(t)
	n1.stop(t)
	n2.stop(t)
}

// loadTask is a reports.generate call of the load.
type loadTask struct {
	key  string
	args map[string]any
	id   string
}

// load runs clients that each loop over: create a task on one node, read
// a task on the other, call an inline tool, pausing briefly between rounds.
// Every response is checked for shape and counted by phase and outcome.
type load struct {
	stop chan struct{}
	wg   sync.WaitGroup
	ids  atomic.Int64

	mu       sync.Mutex
	phase    string
	counts   map[string]int
	slowest  map[string]time.Duration // the longest request of each phase
	problems []string
	acked    []loadTask
	failed   []loadTask // creations answered with an error
}

func startLoad(t *testing.T, clients []*client, n int) *load {
	ld := &load{stop: make(chan struct{}), phase: "before", counts: map[string]int{}, slowest: map[string]time.Duration{}}
	for g := range n {
		ld.wg.Go(func() { ld.run(clients, g) })
	}
	t.Cleanup(ld.finish)
	return ld
}

func (ld *load) run(clients []*client, g int) {
	var last string // the last task this client created
	for i := 0; ; i++ {
		select {
		case <-ld.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		here, there := clients[(g+i)%2], clients[(g+i+1)%2]
		lt := loadTask{key: fmt.Sprintf("load-%d-%d", g, i)}
		lt.args = map[string]any{"accountId": lt.key, "rows": 1 + i, "seconds": 0, "idempotencyKey": lt.key}
		r, ok := ld.do(here, mcp.MethodToolsCall, "reports.generate", map[string]any{"name": "reports.generate", "arguments": lt.args})
		if ok {
			if h, err := r.TaskHandle(); err == nil && h.TaskID != "" {
				lt.id, last = h.TaskID, h.TaskID
				ld.record(func() { ld.acked = append(ld.acked, lt) })
			} else {
				ld.problem("reports.generate: %v: %s", err, r.Body)
			}
		} else {
			ld.record(func() { ld.failed = append(ld.failed, lt) })
		}
		if last != "" {
			ld.do(there, mcp.MethodTasksGet, last, map[string]any{"taskId": last})
		}
		if _, ok := ld.do(here, mcp.MethodToolsCall, "hash.sha256", map[string]any{"name": "hash.sha256", "arguments": map[string]any{"text": lt.key}}); !ok {
			ld.record(func() { ld.counts["inline failed"]++ })
		}
	}
}

// do sends one request and checks that the answer is a well-formed
// JSON-RPC response to it. It reports whether it was a success.
func (ld *load) do(c *client, method, name string, params map[string]any) (*mcptest.Response, bool) {
	id := ld.ids.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	began := time.Now()
	r, err := c.call(ctx, id, method, name, params)
	elapsed := time.Since(began)
	ld.record(func() { ld.slowest[ld.phase] = max(ld.slowest[ld.phase], elapsed) })
	if err != nil {
		ld.problem("%s %s: transport error: %v", method, name, err)
		return nil, false
	}
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
		ld.problem("%s %s: HTTP %d with Content-Type %q: %.200s", method, name, r.Status, ct, r.Body)
		return r, false
	}
	if len(r.Messages) == 0 {
		ld.problem("%s %s: HTTP %d without a JSON-RPC message: %.200s", method, name, r.Status, r.Body)
		return r, false
	}
	var final struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
	}
	json.Unmarshal(r.Messages[len(r.Messages)-1], &final)
	if final.JSONRPC != "2.0" || string(final.ID) != fmt.Sprint(id) || (r.Result == nil) == (r.Error == nil) {
		ld.problem("%s %s: HTTP %d, not a JSON-RPC response to request %d: %.300s", method, name, r.Status, id, r.Body)
		return r, false
	}
	ok := r.Error == nil
	var isError struct {
		IsError bool `json:"isError"`
	}
	if ok && method == mcp.MethodToolsCall && json.Unmarshal(r.Result, &isError) == nil && isError.IsError {
		ok = false // a tool error, for example an internal error while enqueuing
	}
	outcome := "ok"
	if !ok {
		outcome = "error"
		if r.Error != nil {
			if r.Error.Code == 0 || r.Error.Message == "" {
				ld.problem("%s %s: malformed error %s", method, name, r.Body)
			}
			outcome = fmt.Sprintf("error HTTP %d %d %s", r.Status, r.Error.Code, r.Error.Message)
		}
	}
	ld.record(func() {
		ld.counts[ld.phase+" "+strings.Fields(outcome)[0]]++
		ld.counts[method+" "+outcome]++
	})
	return r, ok
}

func (ld *load) record(f func()) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	f()
}

func (ld *load) problem(format string, args ...any) {
	ld.record(func() {
		if len(ld.problems) < 20 {
			ld.problems = append(ld.problems, fmt.Sprintf(format, args...))
		}
		ld.counts["problems"]++
	})
}

func (ld *load) setPhase(p string) { ld.record(func() { ld.phase = p }) }

func (ld *load) count(key string) int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return ld.counts[key]
}

// finish stops the clients and waits for them.
func (ld *load) finish() {
	select {
	case <-ld.stop:
	default:
		close(ld.stop)
	}
	ld.wg.Wait()
}

func (ld *load) summary() string {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ld.counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, ld.counts[k]))
	}
	return strings.Join(parts, ", ")
}

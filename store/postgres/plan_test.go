package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
)

// planNode is the part of EXPLAIN (FORMAT JSON)'s plan tree the plan tests
// read.
type planNode struct {
	NodeType    string     `json:"Node Type"`
	Relation    string     `json:"Relation Name"`
	Loops       float64    `json:"Actual Loops"`
	JoinRemoved float64    `json:"Rows Removed by Join Filter"`
	IndexName   string     `json:"Index Name"`
	Rows        float64    `json:"Actual Rows"`
	Subplan     string     `json:"Subplan Name"`
	SharedHit   float64    `json:"Shared Hit Blocks"`
	Plans       []planNode `json:"Plans"`
}

// walk calls fn for n and every node below it.
func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// TestCompleteBatchPlan checks that a completion batch finds its tasks by
// primary key and its items by position, never by a join with the batch,
// under both the custom and the generic (cached) plan, on a jobs table where done jobs, whose lease is
// NULL, outnumber the running ones, as they do in any long-lived store: the
// planner then estimates that the fence matches one row, and a statement
// that joined the batch with the jobs table scanned every job and re-read
// the whole batch for each of them (quadratic in the batch). How it finds
// the jobs is the planner's choice: on a table this small a sequential scan
// filtering by the batch's hashed IDs costs less than the index.
func TestCompleteBatchPlan(t *testing.T) {
	t.Parallel()
	const total, batch = 3000, 200
	ctx := ctxT(t)
	s := openWithHooks(t, Options{Schema: newSchema(t), Timeout: 30 * time.Second}, testHooks{})
	cc := creation(t, "acme", "echo", `{"n":1}`)
	items := make([]backend.BatchItem, 500)
	for i := range items {
		items[i] = backend.BatchItem{Creation: cc}
	}
	for range total / len(items) {
		if _, err := s.EnqueueBatch(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	bc := s.Jobs().(backend.BatchCompleter)
	for done := 0; done < total-batch; {
		jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: min(500, total-batch-done), Lease: time.Minute})
		if err != nil || len(jobs) == 0 {
			t.Fatalf("Claim = %d jobs, %v", len(jobs), err)
		}
		its := make([]backend.Completion, len(jobs))
		for i, j := range jobs {
			its[i] = backend.Completion{Lease: j.Lease, Result: res}
		}
		if _, err := bc.CompleteBatch(ctx, its); err != nil {
			t.Fatal(err)
		}
		done += len(jobs)
	}
	for _, table := range []string{"jobs", "tasks"} {
		if _, err := s.pool.Exec(ctx, "ANALYZE "+s.q.ident+"."+table); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: batch, Lease: time.Minute})
	if err != nil || len(jobs) != batch {
		t.Fatalf("Claim = %d jobs, %v; want %d", len(jobs), err, batch)
	}
	var ids, messages []string
	var attempts []int64
	var results [][]byte
	var progress []*float64
	for _, j := range jobs {
		ids, attempts, messages = append(ids, j.TaskID), append(attempts, j.Attempt), append(messages, "")
		results, progress = append(results, []byte(`{"content":[]}`)), append(progress, nil)
	}
	args := []any{nil, ids, attempts, messages, results, progress, progress, s.node, int16(0)}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			var out []byte
			if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+s.q.completeBatch, args...).Scan(&out); err != nil {
				t.Fatal(err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
				t.Fatalf("EXPLAIN output %s: %v", out, err)
			}
			var problems []string
			plans[0].Plan.walk(func(n planNode) {
				switch {
				case n.NodeType == "Seq Scan" && n.Relation == "tasks":
					problems = append(problems, "a sequential scan of tasks")
				case n.NodeType == "Function Scan" && n.Loops > 1:
					problems = append(problems, fmt.Sprintf("the batch read %v times", n.Loops))
				case n.JoinRemoved > 0:
					problems = append(problems, fmt.Sprintf("a join that discarded %v rows", n.JoinRemoved))
				}
			})
			if len(problems) > 0 {
				t.Errorf("completing %d of %d jobs: %v\n%s", batch, total, problems, out)
			}
		})
	}
}

// TestFindTaskPlan checks that the statements reading one task for a request
// (tasks/get, tasks/update, tasks/cancel) find it by primary key, on a
// table the planner has no statistics for yet: with the binding compared by
// =, it chose tasks_list (endpoint, tenant, created_at, id) and read every
// index entry of the tenant, about 90 pages here, three times the database
// CPU of the whole lookup under load.
func TestFindTaskPlan(t *testing.T) {
	t.Parallel()
	const total = 6000
	ctx := ctxT(t)
	s := openWithHooks(t, Options{Schema: newSchema(t), Timeout: 30 * time.Second}, testHooks{})
	if _, err := s.pool.Exec(ctx, "ALTER TABLE "+s.q.ident+".tasks SET (autovacuum_enabled = false)"); err != nil {
		t.Fatal(err)
	}
	cc := creation(t, "acme", "echo", `{"n":1}`)
	items := make([]backend.BatchItem, 500)
	for i := range items {
		items[i] = backend.BatchItem{Creation: cc}
	}
	var id string
	for range total / len(items) {
		ts, err := s.EnqueueBatch(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		id = ts[len(ts)/2].ID()
	}
	for _, q := range []struct{ name, sql string }{
		{"findTask", s.q.findTask}, {"lockForUpdate", s.q.lockForUpdate}, {"lockForCancel", s.q.lockForCancel},
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			t.Run(q.name+"/"+mode, func(t *testing.T) {
				plan, out := explain(t, s, mode, q.sql, nil, id, "main", "acme")
				var scans []string
				plan.walk(func(n planNode) {
					if n.Relation == "tasks" {
						scans = append(scans, fmt.Sprintf("%s %s (%v pages)", n.NodeType, n.IndexName, n.SharedHit))
					}
				})
				if want := []string{"Index Scan tasks_pkey"}; len(scans) != 1 || !strings.HasPrefix(scans[0], want[0]+" ") {
					t.Errorf("reading one of %d tasks of a tenant scans %v; want one %s\n%s", total, scans, want[0], out)
				}
			})
		}
	}
}

// TestClaimPlan checks that a claim stays one range scan of
// jobs_claim_queue that stops at its limit, under both the custom and the
// generic (cached) plan, on a table holding several queues, every
// priority, and jobs not due yet: no sort of the due jobs, no scan of the
// jobs of other queues, no sequential scan of jobs or tasks. Sorting the
// due jobs costs a claim time in proportion to the backlog.
func TestClaimPlan(t *testing.T) {
	t.Parallel()
	const total, limit = 6000, 10
	ctx := ctxT(t)
	s := openWithHooks(t, Options{Schema: newSchema(t), Timeout: 30 * time.Second}, testHooks{})
	fillClaimPlanTable(t, s, []string{"default", "mail", "reports"}, total)
	if _, err := s.pool.Exec(ctx, "ANALYZE "+s.q.ident+".jobs"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		name, sql string
		kinds     []string
	}{{"claim", s.q.claim, nil}, {"claimKinds", s.q.claimKinds, []string{"echo"}}} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			t.Run(q.name+"/"+mode, func(t *testing.T) {
				args := []any{nil, limit, "w", int64(60000), "mail", nil}
				if q.kinds != nil {
					args = append(args, q.kinds)
				}
				plan, out := explain(t, s, mode, q.sql, args...)
				scans, _, problems := claimPlanProblems(plan, limit)
				if len(scans) != 1 {
					problems = append(problems, fmt.Sprintf("%d claim index scans; want one Index Scan", len(scans)))
				}
				if len(problems) > 0 {
					t.Errorf("claiming %d of %d jobs in 3 queues: %v\n%s", limit, total, problems, out)
				}
			})
		}
	}
}

// TestClaimQueuesPlan checks that a claim of several queues at once
// (ClaimQueues) is one range scan of jobs_claim_queue per queue, each
// stopping at its queue's limit, under both the custom and the generic
// plan, on the table of TestClaimPlan: no sort of the candidates, no
// scan of another queue's jobs, no sequential scan.
func TestClaimQueuesPlan(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := openWithHooks(t, Options{Schema: newSchema(t), Timeout: 30 * time.Second}, testHooks{})
	const limit = 10
	queues := []string{"default", "mail", "reports", "idle"}
	fillClaimPlanTable(t, s, queues[:3], 6000)
	if _, err := s.pool.Exec(ctx, "ANALYZE "+s.q.ident+".jobs"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			// Four queues, one of them empty; "reports" takes every kind.
			args := []any{nil, []int32{limit, limit, 3, limit}, "w", int64(60000), queues, nil,
				[]string{"echo", "echo", "echo"}, []int32{1, 2, 4}, []bool{false, false, true, false}}
			plan, out := explain(t, s, mode, s.q.claimQueues, args...)
			scans, candidates, problems := claimPlanProblems(plan, limit)
			// One Index Scan node, run once per queue (its Actual Rows is
			// the mean of its loops, rounded).
			if len(scans) != 1 || scans[0].Loops != float64(len(queues)) {
				problems = append(problems, fmt.Sprintf("%d jobs_claim_queue scan nodes; want one, run once per queue", len(scans)))
			}
			if candidates != 2*limit+3 {
				problems = append(problems, fmt.Sprintf("%v candidates in all; want %d", candidates, 2*limit+3))
			}
			if len(problems) > 0 {
				t.Errorf("claiming from %d queues: %v\n%s", len(queues), problems, out)
			}
		})
	}
}

// claimPlanProblems walks the plan of a claim and returns its scans of
// jobs_claim_queue, the rows of its candidates (CTE c), and what is wrong
// with it: a sort of the candidates (sorting the claimed rows is fine), a
// sequential scan, a scan of the claim index other than an Index Scan or
// reading more than limit rows a loop.
func claimPlanProblems(plan planNode, limit int) (scans []planNode, candidates float64, problems []string) {
	plan.walk(func(n planNode) {
		switch {
		case n.Subplan == "CTE c":
			candidates = n.Rows
			n.walk(func(c planNode) {
				if c.NodeType == "Sort" {
					problems = append(problems, "a sort of the candidates")
				}
			})
		case n.NodeType == "Seq Scan":
			problems = append(problems, "a sequential scan of "+n.Relation)
		case n.IndexName == "jobs_claim_queue":
			scans = append(scans, n)
			if n.NodeType != "Index Scan" {
				problems = append(problems, "a "+n.NodeType+" of jobs_claim_queue")
			}
			if n.Rows > float64(limit) {
				problems = append(problems, fmt.Sprintf("%v candidate rows read a loop for a limit of %d", n.Rows, limit))
			}
		}
	})
	return scans, candidates, problems
}

// fillClaimPlanTable enqueues total jobs of kind echo spread over queues,
// of every priority, one in five not due for an hour.
func fillClaimPlanTable(t *testing.T, s *Store, queues []string, total int) {
	t.Helper()
	cc := creation(t, "acme", "echo", `{"n":1}`)
	items := make([]backend.BatchItem, 500)
	for round := range total / len(items) {
		for i := range items {
			o := backend.EnqueueOptions{Queue: queues[(round+i)%len(queues)], Priority: 1 + i%backend.LowestPriority}
			if i%5 == 0 {
				o.RunAt = time.Now().Add(time.Hour)
			}
			items[i] = backend.BatchItem{Creation: cc, Options: o}
		}
		if _, err := s.EnqueueBatch(ctxT(t), items); err != nil {
			t.Fatal(err)
		}
	}
}

// explain runs EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of query with args
// under plan_cache_mode mode, in a transaction it rolls back, and returns
// the plan and its JSON.
func explain(t *testing.T, s *Store, mode, query string, args ...any) (planNode, []byte) {
	t.Helper()
	ctx := ctxT(t)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
		t.Fatal(err)
	}
	var out []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	return plans[0].Plan, out
}

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	twclient "github.com/taskwire/taskwire/client"
)

// TestClientWaitAcrossFleet: a client connected to an API-only node of a
// PostgreSQL fleet waits for a task that a `taskwire worker` in another
// process runs; Task.Wait returns when that node completes it. The CLI,
// in a new process against a third node, finds the same result from the
// saved ID.
func TestClientWaitAcrossFleet(t *testing.T) {
	pgURL := sharedPostgres(t)
	schema := newSchema(t, pgURL)
	common := []string{"--store", pgURL, "--schema", schema, "--log-level", "warn", "--shutdown-grace", "2s"}
	api := launchProc(t, "api", append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, common...)...)
	other := launchProc(t, "api-2", append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, common...)...)
	api.awaitServing()
	other.awaitServing()
	reports := t.TempDir()
	worker := startProc(t, "worker", append([]string{"worker", "--workers", "1", "--reports-dir", reports}, common...)...)

	c, err := twclient.New(api.url, twclient.Options{Token: func(context.Context) (string, error) { return "fleet-user", nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	res, err := c.Call(ctx, "reports.generate", map[string]any{"accountId": "fleet", "rows": 7, "seconds": 1.5})
	if err != nil || res.Task == nil {
		t.Fatalf("call: %v %+v", err, res)
	}
	id := res.Task.ID()
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	var rep Report
	if err := json.Unmarshal(out.StructuredContent, &rep); err != nil || out.IsError || rep.Checksum != checksum("fleet", 7) {
		t.Fatalf("result %+v (%v)", out, err)
	}
	// Only the worker process runs jobs: the report file is its own.
	if job := readJob(t, pgURL, schema, id); job.State != "done" || job.Attempt != 1 {
		t.Errorf("job %+v, want done at the first attempt", job)
	}
	if files, _ := os.ReadDir(reports); len(files) != 1 || files[0].Name() != id+".json" {
		t.Errorf("the worker's reports directory holds %v, want %s.json", files, id)
	}

	// A handle rebuilt from the saved ID, in a new process, on another node.
	began := time.Now()
	r := runCLI(t, []string{"TASKWIRE_TOKEN=fleet-user"}, "task", "wait", "--json", "--url", other.url, id)
	var got struct {
		StructuredContent Report `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 || got.StructuredContent != rep {
		t.Errorf("task wait on another node: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	t.Logf("the CLI found the result in %v", time.Since(began).Round(time.Millisecond))
	for _, p := range []*proc{api, other, worker} {
		p.checkHealthy(t)
	}
}

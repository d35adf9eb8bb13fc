package console_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// TestOverviewQueues: the overview counts the unfinished jobs of each
// queue by state, queues in name order.
func TestOverviewQueues(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, q := range []string{"mail", "mail", "reports"} {
		o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
			Tool: "send", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Enqueue(context.Background(), &task.CreationContext{Origin: o,
			Request: task.RequestContext{Endpoint: "main", Tenant: "tenant-a", Principal: "user-tenant-a"}},
			backend.EnqueueOptions{Queue: q}); err != nil {
			t.Fatal(err)
		}
	}
	r := f.get("/console/")
	mustContain(t, "overview", r.body, "Jobs by queue",
		`<th scope="col">Queue</th><th scope="col" class="num">available</th>`,
		`<tr><th scope="row">default</th><td class="num">2</td>`,
		`<tr><th scope="row">mail</th><td class="num">2</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">2</td></tr>`,
		`<tr><th scope="row">reports</th><td class="num">1</td>`)
}

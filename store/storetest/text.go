package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// badTexts are strings no store may keep as text: invalid UTF-8 (two
// spellings that JSON decoding would both turn into U+FFFD) and a NUL.
var badTexts = []string{"bad\xff", "bad\xfe", "bad\x00"}

// testText: every store refuses the same text it cannot keep, with
// backend.ErrInvalidText naming the field but not the bytes, and writes
// nothing; lookups with such text find nothing; the store stays usable.
func testText(t *testing.T, open opener) {
	b, c := open(t)
	checkRefusal := func(what string, err error, bad string) {
		t.Helper()
		if !errors.Is(err, backend.ErrInvalidText) {
			t.Errorf("%s %q: got %v, want ErrInvalidText", what, bad, err)
			return
		}
		if strings.Contains(err.Error(), bad) {
			t.Errorf("%s %q: the error quotes the text: %v", what, bad, err)
		}
	}
	for _, bad := range badTexts {
		creations := map[string]func() (*task.CreationContext, backend.EnqueueOptions){
			"idempotency key": func() (*task.CreationContext, backend.EnqueueOptions) {
				return creation(t, endpointA, tenantA, toolA, `{"n":1}`), backend.EnqueueOptions{IdempotencyKey: bad}
			},
			"tenant": func() (*task.CreationContext, backend.EnqueueOptions) {
				return creation(t, endpointA, bad, toolA, `{"n":1}`), backend.EnqueueOptions{}
			},
			"principal": func() (*task.CreationContext, backend.EnqueueOptions) {
				cc := creation(t, endpointA, tenantA, toolA, `{"n":1}`)
				cc.Request.Principal = bad
				return cc, backend.EnqueueOptions{}
			},
			"endpoint": func() (*task.CreationContext, backend.EnqueueOptions) {
				return creation(t, bad, tenantA, toolA, `{"n":1}`), backend.EnqueueOptions{}
			},
			"tool": func() (*task.CreationContext, backend.EnqueueOptions) {
				return creation(t, endpointA, tenantA, bad, `{"n":1}`), backend.EnqueueOptions{}
			},
		}
		if bad != "bad\x00" { // a raw NUL is not valid JSON, so no origin holds one
			creations["arguments"] = func() (*task.CreationContext, backend.EnqueueOptions) {
				return creation(t, endpointA, tenantA, toolA, `{"k":"`+bad+`"}`), backend.EnqueueOptions{}
			}
		}
		for field, mk := range creations {
			cc, opts := mk()
			_, err := b.Enqueue(bg, cc, opts)
			checkRefusal("Enqueue with the "+field, err, bad)
		}
		if bb, ok := b.(backend.BatchEnqueuer); ok {
			cc := creation(t, endpointA, bad, toolA, `{"n":1}`)
			_, err := bb.EnqueueBatch(bg, []backend.BatchItem{{Creation: creation(t, endpointA, tenantA, toolA, `{"n":1}`)}, {Creation: cc}})
			checkRefusal("EnqueueBatch with the tenant", err, bad)
		}
	}
	if jobs := claim(t, b, c, 10); len(jobs) != 0 {
		t.Fatalf("refused creations left %d jobs", len(jobs))
	}

	tk := enqueue(t, b, backend.EnqueueOptions{})
	for _, bad := range badTexts {
		for name, r := range map[string]task.RequestContext{
			"tenant": rc(tk.ID(), endpointA, bad), "endpoint": rc(tk.ID(), bad, tenantA), "task ID": rc(tk.ID()+bad, endpointA, tenantA),
		} {
			if _, found, err := b.FindTask(bg, r); found || err != nil {
				t.Errorf("FindTask with a %s %q: found %v, %v; want not found", name, bad, found, err)
			}
			wantErr(t, "UpdateTask with a "+name, b.UpdateTask(bg, task.UpdateContext{RequestContext: r,
				Responses: mcp.InputResponses{"k": respElicit}}), "ErrNotFound")
			wantErr(t, "RequestCancel with a "+name, b.RequestCancel(bg, r), "ErrNotFound")
		}
	}

	// Nothing is counted for an owner whose text no task can hold.
	if ac, ok := b.(task.ActiveCounter); ok {
		for _, bad := range badTexts {
			for name, o := range map[string]task.Owner{
				"tenant": {Tenant: bad, Principal: "alice"}, "principal": {Tenant: tenantA, Principal: bad},
			} {
				if n, err := ac.CountActive(bg, o, 10); n != 0 || err != nil {
					t.Errorf("CountActive with a %s %q: %d, %v; want 0, nil", name, bad, n, err)
				}
			}
		}
	}

	// Worker writes refuse such text and keep the lease.
	j := claimOne(t, b, c, tk.ID())
	for _, bad := range badTexts {
		checkRefusal("RequestInput with a key", b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{bad: reqElicit}, ""), bad)
		checkRefusal("RequestInput with a message", b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"k": reqElicit}, bad), bad)
		checkRefusal("Retry with a message", b.Jobs().Retry(bg, j.Lease, c.Now(), bad, ""), bad)
		checkRefusal("Complete with a message", b.Jobs().Complete(bg, j.Lease, textResult, bad), bad)
		checkRefusal("Fail with a message", b.Jobs().Fail(bg, j.Lease, mcp.InternalError(), bad, ""), bad)
		checkRefusal("Cancel with a message", b.Jobs().Cancel(bg, j.Lease, bad), bad)
		if bc, ok := b.Jobs().(backend.BatchCompleter); ok {
			_, err := bc.CompleteBatch(bg, []backend.Completion{{Lease: j.Lease, Result: textResult, Message: bad}})
			checkRefusal("CompleteBatch with a message", err, bad)
		}
	}
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Working || got.StatusMessage() != "" {
		t.Fatalf("after refused writes: %s %q, want working without a message", got.Status(), got.StatusMessage())
	}
	if err := b.Jobs().Complete(bg, j.Lease, textResult, "ünïcode ok"); err != nil {
		t.Fatalf("Complete after refused writes: %v", err)
	}
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Completed || got.StatusMessage() != "ünïcode ok" {
		t.Fatalf("completed: %s %q", got.Status(), got.StatusMessage())
	}
}

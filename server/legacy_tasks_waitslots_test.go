package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Long waits for a task (here tools/call of a tool that waits inline) are
// bounded on the node by Options.MaxTaskWaits and, for one principal, by a
// quarter of it: a wait beyond either is refused with 503 busy while the
// others go on.
func TestLegacyTaskWaitsBounded(t *testing.T) {
	r := newLTRig(t, func(o *server.Options) { o.MaxTaskWaits = 4 }) // one per principal
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"build.inline","arguments":{}}}`
	for _, tc := range []struct {
		name, who string
		status    int
	}{
		{"alice waits", "alice", http.StatusOK},
		{"alice's second wait passes her share", "alice", http.StatusServiceUnavailable},
		{"bob waits", "bob", http.StatusOK},
		{"carol waits", "carol", http.StatusOK},
		{"dave waits", "dave", http.StatusOK},
		{"erin finds the node's waits taken", "erin", http.StatusServiceUnavailable},
	} {
		c := r.client(ltV06, ltNoCaps, tc.who)
		res, err := http.DefaultClient.Do(c.newPost(ctx, body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != tc.status {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("%s: status %d, body %s; want %d", tc.name, res.StatusCode, b, tc.status)
		}
		if tc.status == http.StatusOK {
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("%s: content type %q, want a waiting SSE stream", tc.name, ct)
			}
			continue
		}
		if b, _ := io.ReadAll(res.Body); !strings.Contains(string(b), "Server busy") {
			t.Errorf("%s: body %s, want Server busy", tc.name, b)
		}
	}
}

// Options.MaxTaskWaits is validated at construction.
func TestMaxTaskWaitsValidated(t *testing.T) {
	_, err := server.New(server.Options{Endpoints: []*server.Endpoint{server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "x", Version: "1"})}, MaxTaskWaits: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxTaskWaits") {
		t.Fatalf("New with MaxTaskWaits -1: %v", err)
	}
}

// The result of tasks/result goes through Options.ResultSanitizer under
// the request deadline, although the wait before it has none.
func TestLegacyTaskResultSanitizerHasDeadline(t *testing.T) {
	deadlines := make(chan bool, 1)
	r := newLTRig(t, func(o *server.Options) {
		o.ResultSanitizer = func(ctx context.Context, _ *server.SanitizeRequest, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
			_, ok := ctx.Deadline()
			select {
			case deadlines <- ok:
			default:
			}
			return res, nil
		}
	})
	c := r.client(ltV11, ltTasksCaps, "alice")
	statusOK(t, c.request("tools/call", `{"name":"build","arguments":{},"task":{"ttl":60000}}`))
	id := r.nextCreated()
	if _, err := r.mem.Complete(id, ltResult(3), ""); err != nil {
		t.Fatal(err)
	}
	statusOK(t, c.request("tasks/result", `{"taskId":"`+id+`"}`))
	if !<-deadlines {
		t.Fatal("the sanitizer of tasks/result ran without a deadline")
	}
}

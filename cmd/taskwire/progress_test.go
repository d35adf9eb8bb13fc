package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// rowMessage is the shape of reports.generate's progress messages.
var rowMessage = regexp.MustCompile(`^row \d+ of 1000$`)

// TestReportsGenerateReportsProgress runs reports.generate for 5 s on a
// real node: tasks/get shows at least three distinct progress messages
// before the task completes, and a listener subscribed to the task receives
// them as notifications/tasks.
func TestReportsGenerateReportsProgress(t *testing.T) {
	n := start(t, testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	c := newClient(t, n.URL())
	id := createTask(t, c, toolReports, map[string]any{"accountId": "acme-42", "rows": 1000, "seconds": 5})

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	stream, res, err := c.Listen(ctx, &mcp.SubscriptionFilter{TaskIDs: []string{id}})
	if err != nil || stream == nil {
		t.Fatalf("listen: %v, response %+v", err, res)
	}
	defer stream.Close()
	heard := make(chan []string, 1)
	go func() { // ends at the completed notification, or when the stream does
		var msgs []string
		defer func() { heard <- msgs }()
		for {
			raw, err := stream.Next(ctx)
			if err != nil {
				return
			}
			var m struct {
				Method string `json:"method"`
				Params struct {
					TaskID        string         `json:"taskId"`
					Status        mcp.TaskStatus `json:"status"`
					StatusMessage string         `json:"statusMessage"`
				} `json:"params"`
			}
			if json.Unmarshal(raw, &m) != nil || m.Method != mcp.NotificationTasks || m.Params.TaskID != id {
				continue
			}
			if m.Params.Status == mcp.TaskCompleted {
				return
			}
			msgs = append(msgs, m.Params.StatusMessage)
		}
	}()

	// Poll as a client would (faster than the suggested interval, to see
	// every value).
	var polled []string
	deadline := time.Now().Add(waitFor)
	for {
		g := getTask(t, c, id)
		if g.Status == mcp.TaskCompleted {
			break
		}
		if g.Status != mcp.TaskWorking {
			t.Fatalf("task %s (error %v)", g.Status, g.Error)
		}
		polled = append(polled, g.StatusMessage)
		if time.Now().After(deadline) {
			t.Fatal("task did not complete")
		}
		time.Sleep(100 * time.Millisecond)
	}
	listened := <-heard

	for what, msgs := range map[string][]string{"tasks/get": polled, "notifications/tasks": listened} {
		distinct := map[string]bool{}
		for _, m := range msgs {
			if rowMessage.MatchString(m) {
				distinct[m] = true
			}
		}
		if len(distinct) < 3 {
			t.Errorf("%s showed %d distinct progress messages, want at least 3: %q", what, len(distinct),
				strings.Join(msgs, " | "))
		}
	}
}

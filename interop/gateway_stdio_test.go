package interop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
)

// serveMCPGoStdio serves, on this process's standard input and output, an
// mcp-go v1.2.1 server with the 2025-11-25 tasks, as a process the gateway
// starts (--upstream-cmd): its slow.build has execution.taskSupport
// "optional". Each call is counted in dir/calls, and holds until
// dir/release exists; a call finding dir/die removes it and exits the
// process (mcp-go keeps its tasks in memory: the next process knows none).
// A task mcp-go cancels is written to dir/stopped, and each tasks/get the
// process reads is counted in dir/polls.
func serveMCPGoStdio(dir string) int {
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	s := mcpGoSlowBuildServer("peer-mcpgo-stdio-tasks",
		func() { _ = os.WriteFile(filepath.Join(dir, "stopped"), nil, 0o600) },
		// mcp-go ends the handler's context once the CreateTaskResult is
		// sent (see mcpGoTaskServer): the handler ignores it.
		func(context.Context, mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
			call := countIn(dir, "calls")
			for deadline := time.Now().Add(waitFor); !exists("release") && time.Now().Before(deadline); {
				if exists("die") {
					_ = os.Remove(filepath.Join(dir, "die"))
					os.Exit(5)
				}
				time.Sleep(10 * time.Millisecond)
			}
			return mcpgomcp.NewToolResultStructured(map[string]int{"call": call}, `{"call":`+itoa(call)+`}`), nil
		})
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadBytes('\n')
			if bytes.Contains(line, []byte(`"method":"tasks/get"`)) {
				countIn(dir, "polls")
			}
			if _, werr := pw.Write(line); werr != nil || err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	if err := mcpgoserver.NewStdioServer(s).Listen(context.Background(), pr, os.Stdout); err != nil &&
		!errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// countIn appends a byte to dir/name and returns the count, this one
// included.
func countIn(dir, name string) int {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return -1
	}
	defer f.Close()
	_, _ = f.Write([]byte{'.'})
	st, err := f.Stat()
	if err != nil {
		return -1
	}
	return int(st.Size())
}

// countOf reads a count of countIn.
func countOf(dir, name string) int {
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// mcpGoStdioGateway is a gateway whose upstream is serveMCPGoStdio, its
// process started by the gateway, in a new directory (returned), spoken to
// in versions (nil: the defaults; mcp-go v1.2.1 answers server/discover
// as a 2026-07-28 server, and has its 2025-11-25 tasks in a 2025-11-25
// session only).
func mcpGoStdioGateway(t *testing.T, ctx context.Context, versions ...string) (*gateway.Gateway, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	g, err := gateway.New(ctx, gateway.Options{
		UpstreamCommand: []string{exe},
		UpstreamEnv:     append(os.Environ(), "INTEROP_MCPGO_STDIO_DIR="+dir),
		TaskTools:       []string{"slow.*"}, RetryTools: []string{"slow.*"},
		ProtocolVersions: versions,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	return g, dir
}

// followedMCPGoStdioTask serves a mcpGoStdioGateway from a node, calls
// slow.build and returns the upstream's directory and the downstream
// task once the gateway polls the mcp-go task.
func followedMCPGoStdioTask(t *testing.T, ctx context.Context) (string, *client.Task) {
	t.Helper()
	g, dir := mcpGoStdioGateway(t, ctx, "2025-11-25")
	url, _ := gatewayNodeOn(t, ctx, g, filepath.Join(t.TempDir(), "gateway.db"))
	res, err := gatewayClient(t, url, nil).Call(ctx, "slow.build", map[string]int{"steps": 1})
	if err != nil || res.Task == nil {
		t.Fatalf("slow.build: %+v %v, want a task", res, err)
	}
	awaitCount(t, ctx, dir, "calls", 1)
	awaitCount(t, ctx, dir, "polls", 1)
	return dir, res.Task
}

// awaitCount waits until the count name in dir reaches n.
func awaitCount(t *testing.T, ctx context.Context, dir, name string, n int) {
	t.Helper()
	for countOf(dir, name) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %d, want %d", name, countOf(dir, name), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestGatewayMCPGoStdioUpstreamTasks puts package gateway in front of an
// mcp-go server with 2025-11-25 tasks that the gateway starts as a
// process and speaks to over stdio. A task tool's run creates an mcp-go
// task and follows it (tasks/get on the process's input) to its
// structured result, with one call. Cancelling the downstream task
// cancels the mcp-go task. When the process dies mid-task, the restarted
// one knows no task (mcp-go keeps them in memory): the run fails saying
// the upstream no longer knows the task, and does not call again, though
// the tool is safe to retry.
func TestGatewayMCPGoStdioUpstreamTasks(t *testing.T) {
	t.Run("followed to its result", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		dir, task := followedMCPGoStdioTask(t, ctx)
		if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := task.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(`{"call":1}`, string(out.StructuredContent)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if n := countOf(dir, "calls"); n != 1 {
			t.Errorf("the mcp-go tool was called %d times, want once", n)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		dir, task := followedMCPGoStdioTask(t, ctx)
		if err := task.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := task.Wait(ctx); !errors.Is(err, client.ErrTaskCancelled) {
			t.Errorf("downstream Wait: %v, want the task cancelled", err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "stopped")); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal("the mcp-go task was not cancelled")
			case <-time.After(20 * time.Millisecond):
			}
		}
	})

	t.Run("the process died and forgot the task", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		dir, task := followedMCPGoStdioTask(t, ctx)
		if err := os.WriteFile(filepath.Join(dir, "die"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := task.Wait(ctx)
		var failed *client.TaskFailedError
		if !errors.As(err, &failed) || !strings.Contains(failed.Err.Message, "no longer knows the task") {
			t.Errorf("Wait: %v, want a failure saying the upstream no longer knows the task", err)
		}
		if n := countOf(dir, "calls"); n != 1 {
			t.Errorf("the mcp-go tool was called %d times, want once", n)
		}
	})
}

// TestGatewayMCPGoStdioModern: with the default versions, the gateway
// finds by server/discover that the mcp-go process speaks 2026-07-28 and
// speaks that revision to it over stdio, with no initialize: a task
// tool's run calls the mcp-go tool (inline, since mcp-go offers its tasks
// in 2025-11-25 sessions only) and completes with its structured result.
func TestGatewayMCPGoStdioModern(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	g, dir := mcpGoStdioGateway(t, ctx)
	if v := g.ProtocolVersion(); v != "2026-07-28" {
		t.Fatalf("ProtocolVersion() = %q, want 2026-07-28", v)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	url, _ := gatewayNodeOn(t, ctx, g, filepath.Join(t.TempDir(), "gateway.db"))
	res, err := gatewayClient(t, url, nil).Call(ctx, "slow.build", map[string]int{"steps": 1})
	if err != nil || res.Task == nil {
		t.Fatalf("slow.build: %+v %v, want a task", res, err)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"call":1}`, string(out.StructuredContent)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

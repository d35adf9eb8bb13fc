package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestSecondInterruptKillsClientCommand runs `taskwire tools` against a
// 2025-06-18 server that opens the session and then stops answering. The
// first SIGINT ends the command, which then sends the DELETE that ends the
// session; a second SIGINT during that DELETE kills the process (the
// default action of SIGINT is back), instead of being swallowed.
func TestSecondInterruptKillsClientCommand(t *testing.T) {
	listed, deleting := make(chan struct{}, 4), make(chan struct{}, 4)
	release := make(chan struct{})
	stall := func(r *http.Request, arrived chan struct{}) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		case http.MethodDelete:
			stall(r, deleting)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stalled","version":"1"}}}`, req.ID)
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "tools/list":
			stall(r, listed)
		default:
			http.Error(w, "not found", http.StatusNotFound)
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })

	cmd := exec.Command(taskwireBinary(t), "tools", "--url", srv.URL+"/mcp")
	cmd.Env = cliEnviron()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	await := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case err := <-exited:
			t.Fatalf("the command ended (%v) before %s\n%s", err, what, stderr.String())
		case <-time.After(cliTimeout):
			t.Fatalf("no %s\n%s", what, stderr.String())
		}
	}
	await(listed, "tools/list")
	cmd.Process.Signal(syscall.SIGINT)
	await(deleting, "DELETE after the first Ctrl-C")
	cmd.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case err = <-exited:
		exited <- err // for the cleanup
	case <-time.After(cliTimeout):
		t.Fatalf("the command did not end after the second Ctrl-C\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit: %v, want death by SIGINT", err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the command ended with %v, want death by SIGINT (the second Ctrl-C)\n%s", err, stderr.String())
	}
}

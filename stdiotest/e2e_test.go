package stdiotest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskwireBin is the `taskwire` binary built once for the tests.
var taskwireBin string

func TestMain(m *testing.M) {
	if db := os.Getenv(clientModeEnv); db != "" {
		os.Exit(clientMain(db))
	}
	dir, err := os.MkdirTemp("", "stdiotest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	taskwireBin = filepath.Join(dir, "taskwire")
	build := exec.Command("go", "build", "-o", taskwireBin, "./cmd/taskwire")
	build.Dir = ".." // the main module, with its own dependencies
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building taskwire:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// waitLimit bounds every wait for the subprocess; it only turns a hang
// into a failure.
const waitLimit = 60 * time.Second

// lockedBuffer collects a subprocess's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// serveCmd is `taskwire serve --stdio` on the SQLite file db, with its
// stderr kept for the test log.
func serveCmd(t *testing.T, db string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(taskwireBin, append([]string{"serve", "--stdio", "--store", "sqlite:" + db, "--log-level", "debug"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return cmd
}

func connect(t *testing.T, cmd *exec.Cmd, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdiotest", Version: "1.0.0"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestGoSDKClient drives `taskwire serve --stdio` with the go-sdk client
// of both eras: it probes with server/discover (2026-07-28) or sends
// initialize (2025-11-25), lists the tools and calls one inline.
func TestGoSDKClient(t *testing.T) {
	tests := []struct{ name, request, want string }{
		{"modern", "", "2026-07-28"},
		{"2025-11-25", "2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18", "2025-06-18"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, serveCmd(t, filepath.Join(t.TempDir(), "tasks.db")), tt.request)
			if got := cs.InitializeResult().ProtocolVersion; got != tt.want {
				t.Fatalf("negotiated %q, want %q", got, tt.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			if !strings.Contains(strings.Join(names, " "), "hash.sha256") {
				t.Fatalf("tools %v lack hash.sha256", names)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hash.sha256", Arguments: map[string]any{"text": "abc"}})
			if err != nil || res.IsError {
				t.Fatalf("tools/call: %v %+v", err, res)
			}
			b, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(b), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") {
				t.Fatalf("structured content %s", b)
			}
		})
	}
}

// rawConn is a go-sdk CommandTransport connection used message by message,
// for the Tasks extension the go-sdk client does not speak.
type rawConn struct {
	t    *testing.T
	conn mcp.Connection
	next int64
}

func dialRaw(t *testing.T, cmd *exec.Cmd) *rawConn {
	t.Helper()
	conn, err := (&mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}).Connect(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return &rawConn{t: t, conn: conn}
}

// tasksMeta is the _meta of a modern client that declares the Tasks
// extension.
var tasksMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
}

// send writes a modern request and returns its ID.
func (c *rawConn) send(method string, params map[string]any) jsonrpc.ID {
	c.t.Helper()
	c.next++
	id, _ := jsonrpc.MakeID(float64(c.next))
	params["_meta"] = tasksMeta
	b, _ := json.Marshal(params)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: b}); err != nil {
		c.t.Fatalf("write %s: %v", method, err)
	}
	return id
}

// read returns the next message.
func (c *rawConn) read() jsonrpc.Message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	m, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

// call sends a request and returns its result, skipping notifications.
func (c *rawConn) call(method string, params map[string]any) json.RawMessage {
	c.t.Helper()
	id := c.send(method, params)
	for {
		if r, ok := c.read().(*jsonrpc.Response); ok {
			if r.ID != id || r.Error != nil {
				c.t.Fatalf("%s: response %v, error %v", method, r.ID, r.Error)
			}
			return r.Result
		}
	}
}

// Client mode: the test binary re-run as an MCP client process of its own
// (clientMain), so that the test can kill the client as well as the server.
const (
	clientModeEnv = "STDIOTEST_CLIENT_DB"
	clientBinEnv  = "STDIOTEST_TASKWIRE"
)

// clientCreated is what the client process prints once its task exists.
type clientCreated struct {
	TaskID     string `json:"taskId"`
	ResultType string `json:"resultType"`
	ServerPID  int    `json:"serverPid"`
}

// clientMain starts `taskwire serve --stdio` on db through the go-sdk
// CommandTransport, creates a reports.generate task, prints a
// clientCreated line and waits to be killed.
func clientMain(db string) int {
	cmd := exec.Command(os.Getenv(clientBinEnv), "serve", "--stdio", "--store", "sqlite:"+db, "--lease", "1s")
	cmd.Stderr = os.Stderr
	conn, err := (&mcp.CommandTransport{Command: cmd}).Connect(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "client: connect:", err)
		return 1
	}
	params, _ := json.Marshal(map[string]any{
		"_meta": tasksMeta, "name": "reports.generate",
		"arguments": map[string]any{"accountId": "acct-stdio", "rows": 5, "seconds": 1.5},
	})
	id, _ := jsonrpc.MakeID(float64(1))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: params}); err != nil {
		fmt.Fprintln(os.Stderr, "client: write:", err)
		return 1
	}
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "client: read:", err)
			return 1
		}
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == id {
			var out clientCreated
			if r.Error != nil || json.Unmarshal(r.Result, &out) != nil {
				fmt.Fprintln(os.Stderr, "client: tools/call:", r.Error)
				return 1
			}
			out.ServerPID = cmd.Process.Pid
			b, _ := json.Marshal(out)
			fmt.Println(string(b))
			break
		}
	}
	select {} // until the test kills this process
}

// TestDurableTaskOutlivesProcesses runs a client process that starts
// `taskwire serve --stdio` through the go-sdk CommandTransport and creates
// a reports.generate task; then it kills the server (SIGKILL, mid-job) and
// the client. A new `taskwire serve --stdio` on the same store takes the
// job over once the dead process's lease expires, a listen on the new
// connection reports the completion, and tasks/get answers with the
// completed result. A process for another --principal cannot read it.
func TestDurableTaskOutlivesProcesses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tasks.db")

	client := exec.Command(os.Args[0], "-test.run=^$")
	client.Env = append(os.Environ(), clientModeEnv+"="+db, clientBinEnv+"="+taskwireBin,
		"HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	stderr := &lockedBuffer{}
	client.Stderr = stderr
	stdout, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	defer client.Process.Kill()
	var created clientCreated
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &created) != nil || created.ResultType != "task" || created.TaskID == "" || created.ServerPID == 0 {
		t.Fatalf("client printed %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	server, err := os.FindProcess(created.ServerPID)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Kill(); err != nil {
		t.Fatalf("kill the server: %v", err)
	}
	if err := client.Process.Kill(); err != nil {
		t.Fatalf("kill the client: %v", err)
	}
	client.Wait()

	second := serveCmd(t, db, "--lease", "1s")
	c2 := dialRaw(t, second)
	defer c2.conn.Close()
	// Follow the task, then read it: the listen's notifications carry its
	// status as the new process's worker completes it.
	listenID := c2.send("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{created.TaskID}}})
	deadline := time.Now().Add(waitLimit)
	for done := false; !done; {
		if time.Now().After(deadline) {
			t.Fatal("no completion notification")
		}
		switch m := c2.read().(type) {
		case *jsonrpc.Request:
			if m.Method == "notifications/tasks" && strings.Contains(string(m.Params), `"status":"completed"`) {
				done = true
			}
			if m.Method == "notifications/tasks" && (strings.Contains(string(m.Params), `"status":"failed"`) || strings.Contains(string(m.Params), `"status":"cancelled"`)) {
				t.Fatalf("task ended: %s", m.Params)
			}
		case *jsonrpc.Response:
			if m.ID == listenID {
				t.Fatalf("listen ended early: %s %v", m.Result, m.Error)
			}
		}
	}
	got := c2.call("tasks/get", map[string]any{"taskId": created.TaskID})
	var task struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(got, &task); err != nil || task.Status != "completed" || !strings.Contains(string(task.Result), `"acct-stdio"`) {
		t.Fatalf("tasks/get after the restart: %s", got)
	}

	// Another --principal on the same store does not see the task.
	c3 := dialRaw(t, serveCmd(t, db, "--principal", "someone-else", "--workers", "0"))
	defer c3.conn.Close()
	id := c3.send("tasks/get", map[string]any{"taskId": created.TaskID})
	for {
		if r, ok := c3.read().(*jsonrpc.Response); ok && r.ID == id {
			if r.Error == nil {
				t.Fatalf("another principal read the task: %s", r.Result)
			}
			break
		}
	}
}

// TestGoSDKLegacyDurableTool: a 2025-11-25 go-sdk client, which knows no
// tasks, calls the durable reports.generate over stdio; the call waits
// inline for the durable task its workers run and returns the report.
func TestGoSDKLegacyDurableTool(t *testing.T) {
	cs := connect(t, serveCmd(t, filepath.Join(t.TempDir(), "tasks.db")), "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reports.generate",
		Arguments: map[string]any{"accountId": "stdio-legacy", "rows": 3, "seconds": 0.5}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call reports.generate: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"accountId":"stdio-legacy"`) || !strings.Contains(string(b), `"rows":3`) {
		t.Fatalf("report %s", b)
	}
}

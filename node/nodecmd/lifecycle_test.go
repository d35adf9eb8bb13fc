package nodecmd_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/node/nodecmd"
	"github.com/taskwire/taskwire/worker"
)

// The tests of this file run the test binary itself as a node program
// (TestMain): `lifecycle serve|worker|migrate`, with one durable tool.

// programEnv makes the test binary run as the program.
const programEnv = "NODECMD_TEST_PROGRAM"

// waitFor bounds every wait of these tests.
const waitFor = 30 * time.Second

// SleepIn is the input of work.sleep.
type SleepIn struct {
	// Seconds of work, ended early by cancellation.
	Seconds float64 `json:"seconds"`
	// Runs is a file each run appends a line to, so that a test counts
	// the runs of its task.
	Runs string `json:"runs"`
}

// SleepOut is the output of work.sleep.
type SleepOut struct {
	Slept float64 `json:"slept"`
}

func TestMain(m *testing.M) {
	if os.Getenv(programEnv) == "1" {
		os.Exit(nodecmd.Main(nodecmd.Program{Name: "lifecycle", Version: "test", Tools: sleepTools()}))
	}
	os.Exit(m.Run())
}

// sleepTools declares work.sleep.
func sleepTools() *durable.Set {
	var tools durable.Set
	durable.Add(&tools, durable.Tool[SleepIn, SleepOut]{
		Tool: &mcp.Tool{Name: "work.sleep", Description: "Sleep, as a durable task."},
		Run: func(ctx context.Context, job *worker.Job, in SleepIn) (SleepOut, error) {
			f, err := os.OpenFile(in.Runs, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return SleepOut{}, worker.Permanent(err)
			}
			fmt.Fprintln(f, "run")
			f.Close()
			t := time.NewTimer(time.Duration(in.Seconds * float64(time.Second)))
			defer t.Stop()
			select {
			case <-t.C:
				return SleepOut{Slept: in.Seconds}, nil
			case <-ctx.Done():
				return SleepOut{}, context.Cause(ctx)
			}
		},
	})
	return &tools
}

// program is a running `lifecycle` process.
type program struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    *lockedBuffer // stdout and stderr
	done   chan struct{}
	err    error
	url    string
	exited time.Time
}

// startProgram starts the program with args in dir; with serve, it returns
// once the URL is printed.
func startProgram(t *testing.T, dir string, args ...string) *program {
	t.Helper()
	p := launchProgram(t, dir, args...)
	if args[0] == "serve" {
		p.url = p.await(regexp.MustCompile(`serving MCP at (http://\S+)`))[1]
	}
	return p
}

// launchProgram starts the program with args in dir and returns at once.
func launchProgram(t *testing.T, dir string, args ...string) *program {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &program{t: t, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(self, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), programEnv+"=1", "TASKWIRE_STORE=", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// await waits for a line of output matching re and returns its groups.
func (p *program) await(re *regexp.Regexp) []string {
	p.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			p.t.Fatalf("the program exited (%v) before printing %v:\n%s", p.err, re, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %v within %v:\n%s", re, waitFor, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signal sends sig.
func (p *program) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the program to exit within d and returns its exit code.
func (p *program) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Fatalf("the program still runs after %v:\n%s", d, p.out.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// client returns an MCP client of the program's endpoint that declares
// the Tasks extension.
func (p *program) client() *mcptest.Client {
	base, path, _ := strings.Cut(strings.TrimPrefix(p.url, "http://"), "/")
	tr := &http.Transport{}
	p.t.Cleanup(tr.CloseIdleConnections)
	c := mcptest.NewClient(mcptest.Remote("http://"+base, &http.Client{Transport: tr, Timeout: waitFor}), "/"+path)
	c.DeclareTasks()
	return c
}

// createTask calls work.sleep and returns the task's ID.
func createTask(t *testing.T, c *mcptest.Client, in SleepIn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	r, err := c.CallTool(ctx, "work.sleep", in)
	if err != nil || r.Error != nil {
		t.Fatalf("tools/call: %v %+v", err, r)
	}
	h, err := r.TaskHandle()
	if err != nil || h.TaskID == "" {
		t.Fatalf("task handle: %v %+v", err, h)
	}
	return h.TaskID
}

// taskStatus returns the task's status.
func taskStatus(t *testing.T, c *mcptest.Client, id string) mcp.TaskStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	r, err := c.GetTask(ctx, id)
	if err != nil || r.Error != nil {
		t.Fatalf("tasks/get: %v %+v", err, r)
	}
	g, err := r.Task()
	if err != nil {
		t.Fatal(err)
	}
	return g.Status
}

// awaitRuns waits until the file runs holds n lines.
func awaitRuns(t *testing.T, runs string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for countRuns(t, runs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs after %v, want %d", countRuns(t, runs), waitFor, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countRuns(t *testing.T, runs string) int {
	t.Helper()
	f, err := os.Open(runs)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

// TestSIGTERMDrainsRunningJobs: SIGTERM while two jobs run lets them
// finish within --shutdown-grace before the process exits 0; nothing is
// lost: a new process on the store reads both tasks completed, and no job
// ran twice.
func TestSIGTERMDrainsRunningJobs(t *testing.T) {
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "tasks.db")
	p := startProgram(t, dir, "serve", "--addr", "127.0.0.1:0", "--store", store, "--workers", "2", "--shutdown-grace", "30s")
	c := p.client()
	runs := []string{filepath.Join(dir, "a.runs"), filepath.Join(dir, "b.runs")}
	var ids []string
	for _, r := range runs {
		ids = append(ids, createTask(t, c, SleepIn{Seconds: 1.5, Runs: r}))
	}
	for _, r := range runs {
		awaitRuns(t, r, 1)
	}
	p.signal(syscall.SIGTERM)
	p.await(regexp.MustCompile(`lifecycle: draining: in-flight requests and running jobs have up to 30s each`))
	if code := p.wait(waitFor); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.out.String())
	}

	q := startProgram(t, dir, "serve", "--addr", "127.0.0.1:0", "--store", store, "--workers", "0")
	qc := q.client()
	for i, id := range ids {
		if s := taskStatus(t, qc, id); s != mcp.TaskCompleted {
			t.Errorf("task %d is %s after the drain, want completed", i, s)
		}
		if n := countRuns(t, runs[i]); n != 1 {
			t.Errorf("task %d ran %d times, want once", i, n)
		}
	}
}

// TestSecondSignalStopsAtOnce: with a drain that would outlast the test,
// a second signal stops the process at once; the running job is released,
// not claimed again in a loop (it ran once before the exit), and runs
// again on the next process.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "tasks.db")
	p := startProgram(t, dir, "serve", "--addr", "127.0.0.1:0", "--store", store, "--workers", "1", "--shutdown-grace", "1h")
	runs := filepath.Join(dir, "long.runs")
	id := createTask(t, p.client(), SleepIn{Seconds: 3600, Runs: runs})
	awaitRuns(t, runs, 1)

	p.signal(syscall.SIGTERM)
	p.await(regexp.MustCompile(`draining: .* up to 1h0m0s each`))
	second := time.Now()
	p.signal(syscall.SIGTERM)
	p.await(regexp.MustCompile(`lifecycle: stopping at once: running jobs are cancelled and will run again later`))
	if code := p.wait(waitFor); code != 0 {
		t.Fatalf("exit code %d after the second signal:\n%s", code, p.out.String())
	}
	if d := p.exited.Sub(second); d > 10*time.Second {
		t.Errorf("the process took %v to stop after the second signal", d)
	}
	if n := countRuns(t, runs); n != 1 {
		t.Errorf("the job ran %d times before the exit, want once (a claim loop?)", n)
	}

	q := startProgram(t, dir, "serve", "--addr", "127.0.0.1:0", "--store", store, "--workers", "1", "--shutdown-grace", "1s")
	if s := taskStatus(t, q.client(), id); s != mcp.TaskWorking {
		t.Errorf("task is %s after the forced stop, want working", s)
	}
	awaitRuns(t, runs, 2) // released at once: no lease to wait for
}

// TestUnreachableStoreFailsFast: a PostgreSQL store nobody listens on
// fails serve, worker and migrate at start, within the connect timeout,
// with exit code 1 and a message naming the resolved store (host, port,
// database, schema) but no password.
func TestUnreachableStoreFailsFast(t *testing.T) {
	dir := t.TempDir()
	url := "postgres://app:secret-password@127.0.0.1:1/invoices" // port 1: refused
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0"},
		{"worker"},
		{"migrate"},
	} {
		t.Run(args[0], func(t *testing.T) {
			began := time.Now()
			p := launchProgram(t, dir, append(args, "--store", url, "--connect-timeout", "3s")...)
			if code := p.wait(waitFor); code != 1 {
				t.Fatalf("exit code %d, want 1:\n%s", code, p.out.String())
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("took %v to fail", d)
			}
			out := p.out.String()
			want := "lifecycle: " + args[0] + ": store PostgreSQL host 127.0.0.1 port 1 database invoices user app schema taskwire: "
			if !strings.Contains(out, want) {
				t.Errorf("output does not name the resolved store (%q):\n%s", want, out)
			}
			if strings.Contains(out, "secret-password") {
				t.Errorf("output shows the password:\n%s", out)
			}
		})
	}
}

// lockedBuffer is an output buffer safe for the process's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

// TestProgramCommands: the program's own name is in its messages, its
// default store is NAME.db, and its usage errors exit 2 with a hint.
func TestProgramCommands(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"migrate"}, 0, "lifecycle: store sqlite:lifecycle.db (SQLite file lifecycle.db"},
		{[]string{"version"}, 0, "lifecycle test\n"},
		{[]string{"serve", "--workers", "-1"}, 2, "lifecycle: serve: --workers must be between 0 and 1024\nRun 'lifecycle serve -h' for usage.\n"},
		{[]string{"serve", "--stdio", "--principal", "", "--store", "sqlite:p.db"}, 1, "lifecycle: serve --stdio: --principal must be 1 to 256 bytes\n"},
		{[]string{"bogus"}, 2, "lifecycle: unknown command \"bogus\"\nRun 'lifecycle help' for usage.\n"},
		{[]string{"help", "serve"}, 0, "usage: lifecycle serve [flags]"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			p := launchProgram(t, dir, tc.args...)
			if code := p.wait(waitFor); code != tc.code || !strings.Contains(p.out.String(), tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit %d and %q", code, p.out.String(), tc.code, tc.want)
			}
		})
	}
}

// TestProgramStdio: `NAME serve --stdio` answers on stdout, keeps its
// store as NAME/NAME.db in the user's data directory, and exits 0 at the
// end of stdin.
func TestProgramStdio(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LatestProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}`
	cmd := exec.Command(self, "serve", "--stdio", "--workers", "1")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), programEnv+"=1", "TASKWIRE_STORE=", "XDG_DATA_HOME="+data)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}` + "\n")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = waitFor
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve --stdio: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(string(out), `"work.sleep"`) || strings.Count(string(out), "\n") != 1 {
		t.Errorf("stdout = %q, want one response listing work.sleep", out)
	}
	if _, err := os.Stat(filepath.Join(data, "lifecycle", "lifecycle.db")); err != nil {
		t.Errorf("no store in the data directory: %v", err)
	}
}

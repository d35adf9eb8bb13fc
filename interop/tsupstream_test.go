package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// The TypeScript SDK v1 server of tsupstream/ behind `taskwire gateway`.

var (
	tsOnce sync.Once
	tsErr  error
)

// tsUpstream returns the directory of tsupstream/ once its pinned
// dependencies are installed there (npm ci into its gitignored
// node_modules, skipped when the installed SDK already has the locked
// version). Without node or npm the test is skipped, or fails under
// CI=true.
func tsUpstream(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required under CI=true: %v", tool, err)
			}
			t.Skipf("%s not found: %v", tool, err)
		}
	}
	dir, err := filepath.Abs("tsupstream")
	if err != nil {
		t.Fatal(err)
	}
	tsOnce.Do(func() { tsErr = npmInstall(dir) })
	if tsErr != nil {
		t.Fatal(tsErr)
	}
	return dir
}

// npmInstall runs npm ci in dir unless node_modules already holds the
// SDK version package-lock.json pins.
func npmInstall(dir string) error {
	version := func(path string, key ...string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		var v map[string]any
		if json.Unmarshal(b, &v) != nil {
			return ""
		}
		for _, k := range key {
			m, _ := v[k].(map[string]any)
			v = m
		}
		s, _ := v["version"].(string)
		return s
	}
	locked := version(filepath.Join(dir, "package-lock.json"), "packages", "node_modules/@modelcontextprotocol/sdk")
	if locked == "" {
		return errors.New("tsupstream/package-lock.json pins no @modelcontextprotocol/sdk")
	}
	if version(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")) == locked {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New("npm ci in tsupstream: " + err.Error() + "\n" + string(out))
	}
	return nil
}

// proc is a process of a test: its output kept, SIGKILLed if still
// running when the test ends.
type proc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// startProc starts name with args in dir with env, and returns it with
// the first match of re on its standard output (re's first group).
func startProc(t *testing.T, dir string, env []string, re *regexp.Regexp, name string, args ...string) (*proc, string) {
	t.Helper()
	p := &proc{out: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Dir, p.cmd.Env, p.cmd.Stderr = dir, env, p.out
	p.cmd.SysProcAttr = childAttr()
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	select {
	case s := <-found:
		return p, s
	case <-p.exited:
		t.Fatalf("%s exited before it was ready:\n%s", name, p.out)
	case <-time.After(waitFor):
		t.Fatalf("%s was not ready within %v:\n%s", name, waitFor, p.out)
	}
	return nil, ""
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

var (
	servingRe   = regexp.MustCompile(`serving MCP at (http://\S+)`)
	listeningRe = regexp.MustCompile(`listening on (http://\S+)`)
	stepRe      = regexp.MustCompile(`^step [1-9] of [1-9]$`)
)

// callCount reads the calls the TypeScript server counted in file.
func callCount(t *testing.T, file string) int {
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestGatewayTypeScriptUpstream puts the TypeScript SDK v1 server of
// tsupstream/ behind `taskwire gateway --task-tools 'slow.*'
// --retry-tools 'slow.*'`, over stdio (--upstream-cmd 'node server.js')
// and over Streamable HTTP (--upstream URL):
//   - a 2026-07-28 client (taskwire's) gets a task for slow.build whose
//     statusMessage follows the upstream's "step i of n" and whose result
//     is the upstream's structuredContent;
//   - a 2025-06-18 client without tasks (go-sdk) waits inline for the
//     same tool and receives progress notifications;
//   - add passes through inline;
//   - the gateway SIGKILLed mid-run and restarted on the same SQLite file
//     completes the task, calling the upstream at most once more.
func TestGatewayTypeScriptUpstream(t *testing.T) {
	dir := tsUpstream(t)
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			env := append(cleanEnv(), "TSUPSTREAM_CALLS="+calls)
			var upstream []string
			if mode == "stdio" {
				upstream = []string{"--upstream-cmd", "node '" + filepath.Join(dir, "server.js") + "'"}
			} else {
				_, url := startProc(t, dir, env, listeningRe, "node", "server.js", "--http")
				upstream = []string{"--upstream", url}
			}
			work := t.TempDir()
			args := append([]string{"gateway", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(work, "gateway.db"),
				"--task-tools", "slow.*", "--retry-tools", "slow.*", "--lease", "1s", "--shutdown-grace", "1s", "--log-level", "warn"}, upstream...)
			gw, url := startProc(t, work, env, servingRe, taskwireBin, args...)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()

			c := tokenClient(t, url)
			res, err := c.Call(ctx, "slow.build", map[string]any{"steps": 3, "stepMs": 400})
			if err != nil || res.Task == nil {
				t.Fatalf("slow.build: %+v %v, want a task", res, err)
			}
			seen := statusMessages(t, ctx, res.Task, "")
			out, err := res.Task.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(`{"call":1,"steps":3}`, canonical(t, out.StructuredContent)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if len(seen) == 0 {
				t.Error("no statusMessage followed the upstream's progress")
			}

			legacyWaitsInline(t, ctx, url)

			add, err := c.Call(ctx, "add", map[string]any{"a": 2, "b": 40})
			if err != nil || add.Task != nil {
				t.Fatalf("add: %+v %v, want an inline result", add, err)
			}
			if diff := cmp.Diff(`{"sum":42}`, canonical(t, add.Result.StructuredContent)); diff != "" {
				t.Errorf("add (-want +got):\n%s", diff)
			}

			// SIGKILL mid-run, restart on the same store.
			res, err = c.Call(ctx, "slow.build", map[string]any{"steps": 4, "stepMs": 1000})
			if err != nil || res.Task == nil {
				t.Fatalf("slow.build: %+v %v, want a task", res, err)
			}
			statusMessages(t, ctx, res.Task, "step 1 of 4")
			before := callCount(t, calls)
			gw.kill()
			_, url2 := startProc(t, work, env, servingRe, taskwireBin, args...)
			out, err = tokenClient(t, url2).Task(res.Task.ID()).Wait(ctx)
			if err != nil {
				t.Fatalf("the task after the restart: %v", err)
			}
			var got struct{ Steps, Call int }
			if err := json.Unmarshal(out.StructuredContent, &got); err != nil || got.Steps != 4 {
				t.Errorf("result after the restart %s: %v", out.StructuredContent, err)
			}
			if after := callCount(t, calls); after > before+1 || after < before {
				t.Errorf("the upstream was called %d times more after the restart, want at most once", after-before)
			}
		})
	}
}

// tokenClient is a 2026-07-28 client of url acting for alice.
func tokenClient(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.Options{Token: func(context.Context) (string, error) { return "alice", nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// statusMessages follows the task until its statusMessage is until (or it
// ends, for ""), checking that each message is one of the upstream's.
func statusMessages(t *testing.T, ctx context.Context, task *client.Task, until string) []string {
	t.Helper()
	var seen []string
	for u, err := range task.Updates(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if m := u.StatusMessage; m != "" && (len(seen) == 0 || seen[len(seen)-1] != m) {
			if !stepRe.MatchString(m) {
				t.Errorf("statusMessage %q is not one of the upstream's progress messages", m)
			}
			seen = append(seen, m)
		}
		if until != "" && u.StatusMessage == until {
			break
		}
	}
	return seen
}

// legacyWaitsInline: a go-sdk client in a 2025-06-18 session, without
// tasks, calls slow.build with a progress token and gets its result
// inline, after progress notifications.
func legacyWaitsInline(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	var (
		mu       sync.Mutex
		messages []string
	)
	cl := gosdk.NewClient(&gosdk.Implementation{Name: "legacy", Version: "1.0.0"}, &gosdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *gosdk.ProgressNotificationClientRequest) {
			mu.Lock()
			messages = append(messages, req.Params.Message)
			mu.Unlock()
		},
	})
	cs, err := cl.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: url}, &gosdk.ClientSessionOptions{ProtocolVersion: mcp.ProtocolVersion20250618})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &gosdk.CallToolParams{Name: "slow.build", Arguments: map[string]any{"steps": 3, "stepMs": 300}}
	params.SetProgressToken("legacy-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("slow.build inline: isError %+v", res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var got struct{ Steps int }
	if err := json.Unmarshal(b, &got); err != nil || got.Steps != 3 {
		t.Errorf("inline result %s: %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(messages) == 0 {
		t.Error("no progress notification while waiting inline")
	}
	for _, m := range messages {
		if m != "" && !stepRe.MatchString(m) && !strings.HasPrefix(m, "Task") {
			t.Errorf("progress message %q", m)
		}
	}
}

// canonical re-encodes JSON with sorted keys.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

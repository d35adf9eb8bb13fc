package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// listenPrefix starts the line on which "durablebench e2e-serve" announces
// its address.
const listenPrefix = "listening on "

// runE2EServe implements "durablebench e2e-serve": a taskwire server whose
// task-required tool benchKind enqueues a task in the store, and a worker
// runtime that completes it with the tool's arguments, in one process,
// until standard input reaches EOF or -max-lifetime passes. The caller
// owns the schema or database file and removes it afterwards.
func runE2EServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("durablebench e2e-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("store", "postgres", "postgres or sqlite")
	pgURL := fs.String("pg-url", "", "PostgreSQL URL (postgres)")
	schema := fs.String("schema", "", "PostgreSQL schema (postgres)")
	pgConns := fs.Int("pg-conns", 16, "store connection pool size (postgres)")
	path := fs.String("sqlite-path", "", "database file (sqlite)")
	concurrency := fs.Int("concurrency", 256, "worker.Options.Concurrency")
	claimBatch := fs.Int("claim-batch", 64, "worker.Options.ClaimBatch")
	workerPoll := fs.Duration("worker-poll", 10*time.Millisecond, "worker.Options.PollInterval")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	maxLifetime := fs.Duration("max-lifetime", 5*time.Minute, "stop after this long in any case")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process here")
	viaGateway := fs.Bool("gateway", false, "serve the task tool through package gateway, in front of a go-sdk upstream on loopback that does the work")
	stages := fs.Bool("stages", false, "time each task's steps (created, claimed, handled, committed, seen completed) and print their percentiles on exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := serveContext(ctx, *maxLifetime)
	defer cancel()

	var st backend.Store
	var err error
	switch *kind {
	case "postgres":
		if err := checkLoopbackURL(*pgURL); err != nil {
			return err
		}
		st, err = postgres.Open(ctx, postgres.Options{URL: *pgURL, Schema: *schema, MaxConns: int32(*pgConns), Logger: warnLogger()})
	case "sqlite":
		st, err = sqlite.Open(ctx, sqlite.Options{Path: *path, Synchronous: "NORMAL", Logger: warnLogger()})
	default:
		return usageError{fmt.Sprintf("e2e-serve: unknown store %q", *kind)}
	}
	if err != nil {
		return err
	}
	defer st.Close()
	var tr *stageTracer
	jobs := st.Jobs()
	manager := st
	if *stages {
		tr = newStageTracer()
		js := st.Jobs().(jobStore)
		bc, _ := js.(backend.BatchCompleter)
		jobs = &tracedJobs{jobStore: js, bc: bc, tr: tr}
		manager = tracedStore{Store: st, tr: tr}
		defer func() { fmt.Fprintf(stdout, "%s%s\n", stagesPrefix, tr.report()) }()
	}

	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "durablebench", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	var gwTools *durable.Set
	if *viaGateway {
		up, err := startGatewayUpstream(stderr)
		if err != nil {
			return err
		}
		defer up.close()
		g, tools, err := serveThroughGateway(ctx, up.url, ep, st)
		if err != nil {
			return err
		}
		defer g.Close()
		gwTools = tools
	} else {
		server.AddTaskTool[benchArgs, benchArgs](ep, &mcp.Tool{Name: benchKind, Description: "Enqueues a durable no-op task."},
			func(ctx context.Context, req *server.Request, _ benchArgs, cc *task.CreationContext) (task.Handle, error) {
				t, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{})
				if err != nil {
					return task.Handle{}, err
				}
				if tr != nil {
					tr.created(t.ID())
				}
				return req.CreatedTask(t), nil
			})
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: manager, Logger: warnLogger(),
		// The benchmark measures the pipeline, not per-caller admission.
		TaskLimits: server.TaskLimits{CreateRate: server.NoLimit, MaxActive: server.NoLimit}})
	if err != nil {
		return err
	}
	rt, err := worker.New(worker.Options{
		Store: jobs, Events: st.EventPublisher(), Name: "durablebench-e2e",
		Concurrency: *concurrency, ClaimBatch: *claimBatch, PollInterval: *workerPoll,
		ShutdownGrace: 5 * time.Second, Logger: warnLogger(),
	})
	if err != nil {
		return err
	}
	if gwTools != nil {
		if err := gwTools.Work(rt); err != nil {
			return err
		}
	} else if err := worker.AddHandler(rt, benchKind, func(_ context.Context, j *worker.Job, in benchArgs) (benchArgs, error) {
		if tr != nil {
			tr.handled(j.TaskID())
		}
		return in, nil
	}); err != nil {
		return err
	}

	return serveLoopback(ctx, cancel, serveOptions{
		Name: "e2e-serve", Addr: *addr, CPUProfile: *cpuProfile, Handler: srv, Work: rt.Run,
	}, stdout, stderr)
}

// serveContext returns the context of a serving subprocess: it ends after
// maxLifetime, or as soon as standard input reaches EOF, which is how the
// parent stops it (nothing is written to it: any read returns when the
// parent closes the pipe or exits).
func serveContext(ctx context.Context, maxLifetime time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, maxLifetime)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx, cancel
}

// serveOptions describe what serveLoopback serves.
type serveOptions struct {
	Name       string       // the subcommand, for error messages
	Addr       string       // a loopback address to listen on
	CPUProfile string       // if set, where to write a CPU profile of the process
	Handler    http.Handler // the HTTP service
	// Work runs the worker alongside the HTTP service until its context
	// ends, then stops it.
	Work func(context.Context) error
}

// serveLoopback listens on o.Addr, which must be a loopback address,
// announces the address on stdout (listenPrefix), and serves o.Handler
// with o.Work running alongside until ctx ends; cancel is called when the
// HTTP server fails. It then shuts the HTTP server down (5 s grace), ends
// the worker's context and waits for it.
func serveLoopback(ctx context.Context, cancel context.CancelFunc, o serveOptions, stdout, stderr io.Writer) error {
	host, _, err := net.SplitHostPort(o.Addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return usageError{fmt.Sprintf("%s: %q is not a loopback address", o.Name, o.Addr)}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	hs := &http.Server{Handler: o.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	runCtx, stopRun := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := o.Work(runCtx); err != nil {
			fmt.Fprintf(stderr, "%s: worker: %v\n", o.Name, err)
		}
	})
	wg.Go(func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "%s: http: %v\n", o.Name, err)
			cancel()
		}
	})
	fmt.Fprintf(stdout, "%s%s\n", listenPrefix, ln.Addr())
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = hs.Shutdown(sctx)
	stopRun()
	wg.Wait()
	return nil
}

// e2eServer is a running "durablebench e2e-serve" subprocess.
type e2eServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	addr   string
	stages chan string // the -stages report, once the server has exited
	exited chan struct{}
	err    error
}

// startE2EServer re-executes this binary as the serving subcommand (e2e-serve
// or river-e2e-serve) with args and waits for its address.
func startE2EServer(ctx context.Context, subcommand string, args []string, stderr io.Writer) (*e2eServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{subcommand}, args...)...)
	cmd.Env = os.Environ()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &e2eServer{cmd: cmd, stdin: stdin, stages: make(chan string, 1), exited: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), listenPrefix); ok {
				select {
				case addrc <- a:
				default:
				}
			}
			if r, ok := strings.CutPrefix(sc.Text(), stagesPrefix); ok {
				select {
				case s.stages <- r:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		s.err = cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.addr = <-addrc:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("e2e server exited before announcing its address: %v", s.err)
	case <-time.After(30 * time.Second):
		err = errors.New("e2e server did not announce its address within 30s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = s.close()
	return nil, err
}

// close stops the subprocess: EOF on its stdin, then SIGKILL after 15 s.
func (s *e2eServer) close() error {
	_ = s.stdin.Close()
	select {
	case <-s.exited:
		return s.err
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("e2e server %d did not stop within 15s; killed", s.cmd.Process.Pid)
	}
}

// e2eClient creates tasks over HTTP and waits for them.
type e2eClient struct {
	http *http.Client
	url  string
}

// meta is the per-request _meta of a 2026-07-28 client that declares Tasks.
const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LatestProtocolVersion + `",` +
	`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"durablebench","version":"1.0.0"}}`

// post sends one JSON-RPC request and decodes the result into v.
func (c *e2eClient) post(ctx context.Context, method, name, body string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h[mcp.HeaderProtocolVersion] = []string{mcp.LatestProtocolVersion}
	h[mcp.HeaderMethod] = []string{method}
	h[mcp.HeaderName] = []string{name}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, truncate(b, 300))
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s: %w: %s", method, err, truncate(b, 300))
	}
	if len(env.Error) > 0 || len(env.Result) == 0 {
		return fmt.Errorf("%s: no result: %s", method, truncate(b, 300))
	}
	if err := json.Unmarshal(env.Result, v); err != nil {
		return fmt.Errorf("%s: %w: %s", method, err, truncate(b, 300))
	}
	return nil
}

// create calls the task-required tool with {"n":n} and returns the task ID
// and whether the task had already completed (the worker may win the race
// with the server's read-back).
func (c *e2eClient) create(ctx context.Context, n int) (string, bool, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + benchKind + `","arguments":{"n":` +
		strconv.Itoa(n) + `},` + meta + `}}`
	var res struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
	}
	if err := c.post(ctx, "tools/call", benchKind, body, &res); err != nil {
		return "", false, err
	}
	if res.ResultType != "task" || res.TaskID == "" || (res.Status != "working" && res.Status != "completed") {
		return "", false, fmt.Errorf("tools/call: resultType %q, taskId %q, status %q; want a working or completed task", res.ResultType, res.TaskID, res.Status)
	}
	return res.TaskID, res.Status == "completed", nil
}

// get reads a task: whether it completed, and then that its result carries
// {"n":n}.
func (c *e2eClient) get(ctx context.Context, id string, n int) (bool, error) {
	idJSON, _ := json.Marshal(id)
	body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":` + string(idJSON) + `,` + meta + `}}`
	var res struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
		Result *struct {
			StructuredContent *benchArgs `json:"structuredContent"`
			IsError           bool       `json:"isError"`
		} `json:"result"`
	}
	if err := c.post(ctx, "tasks/get", id, body, &res); err != nil {
		return false, err
	}
	switch {
	case res.TaskID != id:
		return false, fmt.Errorf("tasks/get: taskId %q, want %q", res.TaskID, id)
	case res.Status == "working":
		return false, nil
	case res.Status != "completed":
		return false, fmt.Errorf("tasks/get: status %q, want working or completed", res.Status)
	case res.Result == nil || res.Result.IsError || res.Result.StructuredContent == nil || res.Result.StructuredContent.N != n:
		return false, fmt.Errorf("tasks/get: completed task %d without the result {\"n\":%d}", n, n)
	}
	return true, nil
}

// truncate shortens b for error messages.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// runE2EPhase is pg-e2e or sqlite-e2e: a server and worker in a subprocess
// on a fresh store, K clients in this process each creating tasks with
// tools/call and polling tasks/get until they complete, M tasks in all.
// With viaGateway it is pg-gateway-e2e or sqlite-gateway-e2e: the same
// tool served by package gateway, whose worker calls a go-sdk upstream in
// the same subprocess for every task.
func runE2EPhase(ctx context.Context, cfg config, kind string, viaGateway bool, out, stderr io.Writer) ([]figure, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	args := []string{
		"-store", kind,
		"-concurrency", strconv.Itoa(cfg.E2EConcurrency), "-claim-batch", strconv.Itoa(cfg.E2EClaimBatch),
		"-worker-poll", cfg.E2EWorkerPoll.String(),
		"-max-lifetime", (cfg.PhaseTimeout + time.Minute).String(),
	}
	what, phase := "taskwire "+kind+": HTTP create → tasks/get completed", phaseName(kind, "e2e")
	if viaGateway {
		args = append(args, "-gateway")
		what, phase = "taskwire gateway "+kind+" (go-sdk upstream): HTTP create → tasks/get completed", phaseName(kind, "gateway-e2e")
	}
	var where string
	switch kind {
	case "postgres":
		schema := randomName("twbench_")
		where = "schema " + schema
		args = append(args, "-pg-url", cfg.pgURL(), "-schema", schema, "-pg-conns", strconv.Itoa(int(cfg.PGConns)))
		defer func() {
			if err := dropSchema(cfg.pgURL(), schema); err != nil {
				fmt.Fprintf(out, "   !!! cleanup: %v\n", err)
			}
		}()
	case "sqlite":
		dir, err := os.MkdirTemp(cfg.TempDir, "durablebench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		where = filepath.Join(dir, "tasks.db")
		args = append(args, "-sqlite-path", where)
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(cfg.ProfileDir, kind+"-e2e-server.pprof")
		args = append(args, "-cpuprofile", p, "-stages")
		defer fmt.Fprintf(out, "   CPU profile of the server process: %s\n", p)
	}
	srv, err := startE2EServer(ctx, "e2e-serve", args, stderr)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.close()
		}
	}()
	fmt.Fprintf(out, "   server + worker subprocess (pid %d) on http://%s/mcp, store %s %s; worker Concurrency %d, ClaimBatch %d, PollInterval %s\n",
		srv.cmd.Process.Pid, srv.addr, kind, where, cfg.E2EConcurrency, cfg.E2EClaimBatch, cfg.E2EWorkerPoll)

	hc := newE2EHTTPClient(cfg)
	defer hc.CloseIdleConnections()
	c := &e2eClient{http: hc, url: "http://" + srv.addr + "/mcp"}

	// Verify before load: one task end to end, checked.
	id, took, err := verifyE2E(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "   verified: tools/call created working task %s; tasks/get reported it completed with {\"n\":0} after %s\n", id, fmtDur(took))

	r, err := runE2ELoad(ctx, cfg, c, srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	stopped = true
	if err := srv.close(); err != nil {
		return nil, fmt.Errorf("stop server: %w", err)
	}
	select {
	case st := <-srv.stages:
		fmt.Fprintf(out, "   steps in the server: %s\n", st)
	default:
	}
	r.report(out, "tools/call", "tasks/get")
	return []figure{{
		Phase: phase, What: what, Rate: r.rate(), Unit: "tasks/s",
		Note: r.latencyNote(),
	}}, nil
}

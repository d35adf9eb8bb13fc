package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// benchConfig holds the flags of "mcpbench run".
type benchConfig struct {
	Scenario    scenario
	Targets     []target
	Mode        string
	Warmup      time.Duration
	Rounds      int
	Load        loadConfig
	ServerProcs int
	Verbose     bool
	CheckGoals  bool
}

// targetResult is the outcome for one target.
type targetResult struct {
	Target  target
	Skipped string // reason the target was skipped, if it was
	Err     error  // why the target failed, if it did
	Result  loadResult
	Body    []byte    // verified response body
	Rounds  []float64 // req/s of every measured round, in order
}

// errBenchmarkFailed is returned when at least one target failed.
var errBenchmarkFailed = errors.New("benchmark failed: see the table above")

// parseBenchFlags parses the flags of "mcpbench run".
func parseBenchFlags(args []string, stderr io.Writer) (benchConfig, error) {
	fs := flag.NewFlagSet("mcpbench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarioName := fs.String("scenario", scenarioToolsCall, "workload: tools-call (inline tools/call of test_simple_text) or tasks-get (tasks/get of a completed task; targets taskwire and bare)")
	targetList := fs.String("targets", "", "comma-separated targets to run, in order (default: every target of the scenario)")
	mode := fs.String("mode", "subprocess", "how to run servers: subprocess (a separate \"mcpbench serve\" process per target) or inprocess")
	duration := fs.Duration("duration", 10*time.Second, "measured load duration per target (whole seconds)")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured warm-up load per target before the measured run (whole seconds; 0 disables)")
	rounds := fs.Int("rounds", 1, "measured rounds per target; targets are interleaved in every round and each target's median round is reported")
	threads := fs.Int("threads", 2, "wrk threads")
	conns := fs.Int("connections", 64, "wrk connections (total, across threads)")
	timeout := fs.Duration("timeout", 5*time.Second, "wrk per-request timeout (whole seconds); a timed-out request fails the run")
	wrk := fs.String("wrk", "wrk", "wrk binary")
	serverProcs := fs.Int("server-procs", 0, "GOMAXPROCS for server subprocesses (0 leaves the Go default)")
	checkGoals := fs.Bool("check-goals", false, "also fail unless taskwire meets the scenario's throughput goals (tools-call: >= 7x go-sdk, >= 70% of bare; "+
		"legacy-tools-call: legacy >= 0.7x modern, >= 5x gosdk-stateful, modern >= 70% of bare)")
	verbose := fs.Bool("v", false, "print the exact request and verified response per target, and wrk's own output")
	if err := fs.Parse(args); err != nil {
		return benchConfig{}, err
	}
	if fs.NArg() > 0 {
		return benchConfig{}, usageError{fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	sc, err := lookupScenario(*scenarioName)
	if err != nil {
		return benchConfig{}, err
	}
	if *targetList == "" {
		*targetList = sc.DefaultTargets
	}
	targets, err := selectTargets(*targetList)
	if err != nil {
		return benchConfig{}, err
	}
	if err := sc.checkTargets(targets); err != nil {
		return benchConfig{}, err
	}
	switch {
	case *mode != "subprocess" && *mode != "inprocess":
		return benchConfig{}, usageError{fmt.Sprintf("-mode %q: want subprocess or inprocess", *mode)}
	case *duration < time.Second || *duration%time.Second != 0:
		return benchConfig{}, usageError{fmt.Sprintf("-duration %v: want a whole number of seconds, at least 1s", *duration)}
	case *warmup < 0 || *warmup%time.Second != 0:
		return benchConfig{}, usageError{fmt.Sprintf("-warmup %v: want a whole number of seconds, or 0", *warmup)}
	case *timeout < time.Second || *timeout%time.Second != 0:
		return benchConfig{}, usageError{fmt.Sprintf("-timeout %v: want a whole number of seconds, at least 1s", *timeout)}
	case *rounds < 1:
		return benchConfig{}, usageError{"-rounds must be at least 1"}
	case *threads < 1:
		return benchConfig{}, usageError{"-threads must be at least 1"}
	case *conns < *threads:
		return benchConfig{}, usageError{"-connections must be at least -threads"}
	case *serverProcs < 0:
		return benchConfig{}, usageError{"-server-procs must not be negative"}
	}
	return benchConfig{
		Scenario: sc,
		Targets:  targets,
		Mode:     *mode,
		Warmup:   *warmup,
		Rounds:   *rounds,
		Load: loadConfig{
			Wrk:         *wrk,
			Threads:     *threads,
			Connections: *conns,
			Duration:    *duration,
			Timeout:     *timeout,
		},
		ServerProcs: *serverProcs,
		Verbose:     *verbose,
		CheckGoals:  *checkGoals,
	}, nil
}

// runBenchmark implements "mcpbench run".
//
// It starts and verifies every selected target first, then warms each one
// up, then runs the measured load rounds, visiting the targets in order in
// every round, and finally prints the table of each target's median round.
func runBenchmark(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseBenchFlags(args, stderr)
	if err != nil {
		return err
	}
	// Server subprocesses copy their standard error into stderr from
	// goroutines of their own, unless it is an *os.File.
	if _, ok := stderr.(*os.File); !ok {
		stderr = &lockedWriter{w: stderr}
	}
	wrk, err := findWrk(cfg.Load.Wrk)
	if err != nil {
		return err
	}
	cfg.Load.Wrk = wrk
	scriptDir, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return fmt.Errorf("create directory for wrk scripts: %w", err)
	}
	defer os.RemoveAll(scriptDir)

	fmt.Fprintf(stdout, "mcpbench: %s, %d CPUs, wrk -t%d -c%d -d%s --timeout %s, warm-up %s, %d round(s), servers: %s\n",
		runtime.Version(), runtime.NumCPU(), cfg.Load.Threads, cfg.Load.Connections,
		wrkSeconds(cfg.Load.Duration), wrkSeconds(cfg.Load.Timeout), wrkSeconds(cfg.Warmup), cfg.Rounds, cfg.Mode)
	fmt.Fprintf(stdout, "scenario %s: %s\n", cfg.Scenario.Name, cfg.Scenario.Description)

	runs := make([]*targetRun, len(cfg.Targets))
	defer func() {
		for _, r := range runs {
			if r != nil {
				r.stop()
			}
		}
	}()
	for i, t := range cfg.Targets {
		runs[i] = &targetRun{targetResult: targetResult{Target: t}}
	}
	// The tasks-get scenario replays tasks/get of a task the taskwire
	// target creates, so taskwire is prepared first; every target then gets
	// the same request.
	setup := &scenarioSetup{scenario: cfg.Scenario}
	for _, r := range prepareOrder(runs) {
		r.prepare(ctx, cfg, setup, scriptDir, stdout, stderr)
	}
	checkSameShapes(cfg.Scenario, runs, stdout)
	for _, r := range runs {
		r.warmUp(ctx, cfg, stdout)
	}
	for round := 1; round <= cfg.Rounds; round++ {
		for _, r := range runs {
			r.measure(ctx, cfg, round, stdout)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}

	results := make([]targetResult, len(runs))
	for i, r := range runs {
		r.stop()
		results[i] = r.summary()
	}
	fmt.Fprintln(stdout)
	printReport(stdout, cfg.Scenario, results)

	failed := false
	for _, r := range results {
		if r.Skipped != "" {
			fmt.Fprintf(stderr, "\n!!! WARNING: target %s was SKIPPED: %s\n!!! Its row and ratios are missing from this run.\n", r.Target.Name, r.Skipped)
		}
		if r.Err != nil {
			failed = true
			fmt.Fprintf(stderr, "mcpbench: target %s FAILED: %v\n", r.Target.Name, r.Err)
		}
	}
	if failed {
		return errBenchmarkFailed
	}
	if cfg.CheckGoals {
		for _, g := range cfg.Scenario.Goals(results) {
			if !g.Met {
				return fmt.Errorf("goal check (-check-goals) failed: %s", g)
			}
		}
	}
	return nil
}

// targetRun tracks one target through a benchmark run.
type targetRun struct {
	targetResult
	srv     runningTarget
	baseURL string
	script  string
	rounds  []loadResult
}

// ok reports whether the target is still in the race.
func (r *targetRun) ok() bool { return r.Skipped == "" && r.Err == nil }

// prepare starts the target's server, verifies that it answers the
// benchmark request with the expected result, and writes its wrk script.
func (r *targetRun) prepare(ctx context.Context, cfg benchConfig, setup *scenarioSetup, scriptDir string, stdout, stderr io.Writer) {
	t := r.Target
	if t.Unavailable != "" {
		r.Skipped = t.Unavailable
		fmt.Fprintf(stderr, "\n!!! SKIPPING target %s: %s\n\n", t.Name, t.Unavailable)
		return
	}
	fmt.Fprintf(stdout, "== %s: %s\n", t.Name, t.Description)
	srv, err := startTarget(ctx, cfg, t, stderr)
	if err != nil {
		r.Err = err
		return
	}
	r.srv = srv
	r.baseURL = "http://" + srv.Addr()
	fmt.Fprintf(stdout, "   serving on %s%s\n", r.baseURL, endpointPath)

	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	if err := setup.apply(vctx, client, r, stdout); err != nil {
		r.Err = err
		return
	}
	t = r.Target
	body, err := verifyExpect(vctx, client, r.baseURL, t.Request, t.Expect)
	if err != nil {
		r.Err = fmt.Errorf("verification before load: %w", err)
		return
	}
	r.Body = body
	fmt.Fprintf(stdout, "   verified: 200 application/json, %s (%d bytes)\n", t.Expect.orDefault().What, len(body))
	if cfg.Verbose {
		fmt.Fprintf(stdout, "   request:\n%s   response: %s\n", indent(t.Request.String(), "     "), body)
	}
	if r.script, err = writeWrkScript(scriptDir, t); err != nil {
		r.Err = err
	}
}

// warmUp runs the unmeasured warm-up load.
func (r *targetRun) warmUp(ctx context.Context, cfg benchConfig, stdout io.Writer) {
	if !r.ok() || cfg.Warmup == 0 || ctx.Err() != nil {
		return
	}
	warm := cfg.Load
	warm.Duration = cfg.Warmup
	res, out, err := runWrk(ctx, warm, r.script, r.baseURL)
	if cfg.Verbose {
		fmt.Fprintf(stdout, "   %s warm-up, wrk output:\n%s", r.Target.Name, indent(out, "     "))
	}
	if err != nil {
		r.Err = fmt.Errorf("warm-up: %w", err)
		return
	}
	if p := res.Problem(); p != "" {
		r.Result = res
		r.Err = fmt.Errorf("warm-up: %s", p)
		return
	}
	fmt.Fprintf(stdout, "   %-12s warm-up: %.0f req/s\n", r.Target.Name, res.ReqPerSec())
}

// measure runs one measured load round.
func (r *targetRun) measure(ctx context.Context, cfg benchConfig, round int, stdout io.Writer) {
	if !r.ok() || ctx.Err() != nil {
		return
	}
	res, out, err := runWrk(ctx, cfg.Load, r.script, r.baseURL)
	if cfg.Verbose {
		fmt.Fprintf(stdout, "   %s round %d, wrk output:\n%s", r.Target.Name, round, indent(out, "     "))
	}
	if err != nil {
		r.Err = fmt.Errorf("round %d: %w", round, err)
		return
	}
	r.rounds = append(r.rounds, res)
	if p := res.Problem(); p != "" {
		r.Result = res
		r.Err = fmt.Errorf("round %d: %s", round, p)
		return
	}
	fmt.Fprintf(stdout, "   %-12s round %d/%d: %.0f req/s, p50 %s, p99 %s\n", r.Target.Name, round, cfg.Rounds,
		res.ReqPerSec(), fmtLatency(res.P50US), fmtLatency(res.P99US))
}

// stop stops the target's server if it is running.
func (r *targetRun) stop() {
	if r.srv == nil {
		return
	}
	if err := r.srv.Close(); err != nil && r.Err == nil {
		r.Err = fmt.Errorf("stop server: %w", err)
	}
	r.srv = nil
}

// summary returns the target's result: the round with the median req/s,
// with the throughput of every round alongside.
func (r *targetRun) summary() targetResult {
	res := r.targetResult
	for _, l := range r.rounds {
		res.Rounds = append(res.Rounds, l.ReqPerSec())
	}
	if r.ok() && len(r.rounds) > 0 {
		res.Result = medianRound(r.rounds)
	}
	return res
}

// medianRound returns the round with the median throughput (the lower
// middle one for an even count).
func medianRound(rounds []loadResult) loadResult {
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b loadResult) int { return cmp.Compare(a.ReqPerSec(), b.ReqPerSec()) })
	return sorted[(len(sorted)-1)/2]
}

// startTarget serves t as cfg.Mode says.
func startTarget(ctx context.Context, cfg benchConfig, t target, stderr io.Writer) (runningTarget, error) {
	if cfg.Mode == "inprocess" {
		return startServer(t)
	}
	// Servers of all targets run side by side for the whole benchmark, so
	// this covers every target's warm-up and rounds plus a margin; the
	// harness stops the servers well before this in any normal run.
	perTarget := cfg.Warmup + time.Duration(cfg.Rounds)*cfg.Load.Duration + 2*cfg.Load.Timeout
	lifetime := time.Duration(len(cfg.Targets))*perTarget + 2*time.Minute
	return startSubprocess(ctx, t, subprocessOptions{
		GoMaxProcs:  cfg.ServerProcs,
		MaxLifetime: lifetime,
		Stderr:      stderr,
	})
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p to the underlying writer under the lock.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// indent prefixes every non-empty line of s with prefix.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		b.WriteString(prefix)
		b.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// scenarioSetup adapts each target's request to the scenario before its
// verification.
type scenarioSetup struct {
	scenario scenario
	// taskID is the task every target of a tasks-get run is asked for.
	taskID string
}

// apply sets r's request and expectation for the scenario. A
// session-bound target first gets its 2025-11-25 session opened, and its
// request then carries that session. In a tasks-get run, the taskwire
// target first gets its task created (and completed); every target then
// receives tasks/get of that task.
func (s *scenarioSetup) apply(ctx context.Context, client *http.Client, r *targetRun, stdout io.Writer) error {
	if r.Target.Session {
		id, err := openLegacySession(ctx, client, r.baseURL)
		if err != nil {
			return fmt.Errorf("set-up before load: %w", err)
		}
		r.Target.Request = legacySessionToolsCallRequest(id)
		fmt.Fprintf(stdout, "   opened a %s session (initialize, notifications/initialized)\n", legacyProtocolVersion)
	}
	if s.scenario.Name == scenarioLegacyToolsCall {
		// Every target of the run numbers its requests alike, so that the
		// load generator's cost is the same for all of them.
		r.Target.Request.UniqueIDs = true
		return nil
	}
	if s.scenario.Name != scenarioTasksGet {
		return nil
	}
	if r.Target.Name == "taskwire" && s.taskID == "" {
		id, err := createCompletedTask(ctx, client, r.baseURL)
		if err != nil {
			return fmt.Errorf("set-up before load: %w", err)
		}
		s.taskID = id
		fmt.Fprintf(stdout, "   created task %s with slow_compute {\"seconds\":0}; tasks/get reports it completed\n", id)
	}
	if s.taskID == "" {
		s.taskID = randomTaskID()
	}
	r.Target.Request = tasksGetRequest(s.taskID)
	r.Target.Expect = tasksGetExpectation(s.taskID)
	return nil
}

// prepareOrder returns runs with the taskwire target first: in a tasks-get
// run it creates the task that every target is asked for.
func prepareOrder(runs []*targetRun) []*targetRun {
	out := make([]*targetRun, 0, len(runs))
	for _, r := range runs {
		if r.Target.Name == "taskwire" {
			out = append(out, r)
		}
	}
	for _, r := range runs {
		if r.Target.Name != "taskwire" {
			out = append(out, r)
		}
	}
	return out
}

// checkSameShapes fails, in a tasks-get run, the bare target when its
// verified response differs from taskwire's in shape or size: the baseline
// must answer the same request with a response of the same shape and size.
func checkSameShapes(sc scenario, runs []*targetRun, stdout io.Writer) {
	if sc.Name != scenarioTasksGet {
		return
	}
	var tw, bare *targetRun
	for _, r := range runs {
		switch {
		case !r.ok() || r.Body == nil:
		case r.Target.Name == "taskwire":
			tw = r
		case r.Target.Name == "bare":
			bare = r
		}
	}
	if tw == nil || bare == nil {
		return
	}
	if err := sameShape(tw.Body, bare.Body); err != nil {
		bare.Err = fmt.Errorf("response differs from taskwire's: %w", err)
		return
	}
	fmt.Fprintf(stdout, "== bare and taskwire responses have the same shape and size (%d bytes)\n", len(bare.Body))
}

package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config holds the flags of the benchmark commands.
type config struct {
	Clients     int
	PerClient   int
	Rate        int
	Duration    time.Duration
	Streams     int
	OpenConc    int
	CheckGoals  bool
	MaxLifetime time.Duration
	Profile     string
	Each        bool
	Reader      string
	H2C         bool
	RSSClose    bool

	Listeners    int
	FanoutTasks  int
	FanoutRate   int
	DistinctRate int
	ChurnStreams int
	ChurnRate    int
	ChurnFor     time.Duration
	CreateRate   int
}

// The latency targets: p99 commit-to-arrival.
const (
	goalP99      = 20 * time.Millisecond // latency, fanout, distinct
	goalChurnP99 = 50 * time.Millisecond // churn: under a creation load
)

// commands lists the benchmark commands in the order "run" runs them.
var commands = []string{"latency", "fanout", "distinct", "churn", "rss"}

func parseFlags(cmd string, args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("listenbench "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Clients, "clients", 1000, "latency: listening clients, each with its own connection and tenant")
	fs.IntVar(&c.PerClient, "tasks-per-client", 5, "latency: tasks each client follows")
	fs.IntVar(&c.Rate, "rate", 500, "latency: task completions per second")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "latency: how long the driver completes tasks (rate × duration ≤ clients × tasks-per-client)")
	fs.IntVar(&c.Streams, "streams", 10000, "rss: idle listen streams to hold")
	fs.BoolVar(&c.RSSClose, "rss-close", false, "rss: then close the streams from the client side and measure what the server keeps")
	fs.IntVar(&c.OpenConc, "open-concurrency", 64, "listens opened at once")
	fs.IntVar(&c.Listeners, "listeners", 1000, "fanout, distinct: listening streams")
	fs.IntVar(&c.FanoutTasks, "fanout-tasks", 10, "fanout: tasks of one tenant, each followed by every listener")
	fs.IntVar(&c.FanoutRate, "fanout-rate", 5, "fanout: task completions per second")
	fs.IntVar(&c.DistinctRate, "distinct-rate", 5000, "distinct: task completions per second (each listener follows its own task)")
	fs.IntVar(&c.ChurnStreams, "churn-streams", 2000, "churn: listening streams, one task and one tenant each")
	fs.IntVar(&c.ChurnRate, "churn-rate", 200, "churn: completions per second of followed tasks")
	fs.DurationVar(&c.ChurnFor, "churn-duration", 5*time.Second, "churn: how long completions and the creation load run")
	fs.IntVar(&c.CreateRate, "create-rate", 1000, "churn: task creations per second over HTTP (tools/call) during the run")
	fs.BoolVar(&c.CheckGoals, "check-goals", false, "also exit non-zero unless every p99 target is met")
	fs.DurationVar(&c.MaxLifetime, "max-lifetime", 10*time.Minute, "stop the server subprocess after this long in any case")
	fs.BoolVar(&c.H2C, "h2c", false, "serve and listen over unencrypted HTTP/2 (many streams per connection) instead of one HTTP/1.1 connection per stream")
	fs.StringVar(&c.Reader, "reader", "goroutine", `how the harness reads HTTP/1.1 streams: "goroutine" (one per stream) or "epoll" (one for all, raw sockets; less harness CPU)`)
	fs.BoolVar(&c.Each, "each", false, "also print each completion's last arrival, in commit order")
	fs.StringVar(&c.Profile, "profile", "", "write the server's CPU and heap profiles to PREFIX.SCENARIO.cpu and .heap, and the harness's CPU profile of the drive to PREFIX.SCENARIO.harness.cpu")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, usageError{fmt.Sprintf("unexpected arguments %q", fs.Args())}
	case c.Clients < 1 || c.PerClient < 1 || c.Rate < 1 || c.Duration <= 0 || c.Streams < 1 || c.OpenConc < 1 || c.MaxLifetime <= 0,
		c.Listeners < 1 || c.FanoutTasks < 1 || c.FanoutRate < 1 || c.DistinctRate < 1,
		c.ChurnStreams < 1 || c.ChurnRate < 1 || c.ChurnFor <= 0 || c.CreateRate < 0:
		return c, usageError{"every count and duration must be positive"}
	case c.Reader != "goroutine" && c.Reader != "epoll":
		return c, usageError{fmt.Sprintf("-reader %q: want goroutine or epoll", c.Reader)}
	case c.Reader == "epoll" && c.H2C:
		return c, usageError{"-reader epoll reads HTTP/1.1 streams only, not -h2c"}
	case c.PerClient > 256 || c.FanoutTasks > 256:
		return c, usageError{"-tasks-per-client and -fanout-tasks are at most 256"}
	case float64(c.ChurnRate)*c.ChurnFor.Seconds() > float64(c.ChurnStreams):
		return c, usageError{"-churn-rate × -churn-duration must not exceed -churn-streams"}
	case float64(c.Rate)*c.Duration.Seconds() > float64(c.Clients*c.PerClient):
		return c, usageError{fmt.Sprintf("%d completions/s for %v need %v tasks; only %d exist (clients × tasks-per-client)",
			c.Rate, c.Duration, int(float64(c.Rate)*c.Duration.Seconds()), c.Clients*c.PerClient)}
	}
	return c, nil
}

// runBenchmarks implements "listenbench run", "latency" and "rss".
func runBenchmarks(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(cmd, args, stderr)
	if err != nil {
		return err
	}
	limit := raiseNoFile()
	fmt.Fprintf(stdout, "listenbench: %s, %d CPUs, GOMAXPROCS %d, load average %s, %s\n",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAverage(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(stdout, "command: listenbench %s %s\n", cmd, strings.Join(args, " "))
	fmt.Fprintf(stdout, "RLIMIT_NOFILE (harness and server): %d\n\n", limit)
	var errs []error
	for _, name := range commands {
		if cmd != "run" && cmd != name {
			continue
		}
		if name == "rss" {
			errs = append(errs, runRSS(ctx, cfg, limit, stdout, stderr))
			continue
		}
		errs = append(errs, runLatency(ctx, cfg, scenarioOf(cfg, name), limit, stdout, stderr))
	}
	return errors.Join(errs...)
}

// scenarioOf returns the latency scenario of a command.
func scenarioOf(cfg config, name string) scenario {
	switch name {
	case "fanout":
		n := cfg.Listeners
		return scenario{
			name: name, describe: fmt.Sprintf("%d listens of one tenant, each following the same %d tasks; %d completions/s",
				n, cfg.FanoutTasks, cfg.FanoutRate),
			clients: 1, perClient: cfg.FanoutTasks,
			listens: func(tasks [][]string) []listenSpec {
				out := make([]listenSpec, n)
				for i := range out {
					out[i] = listenSpec{client: 0, ids: tasks[0]}
				}
				return out
			},
			rate: cfg.FanoutRate, duration: durationFor(cfg.FanoutTasks, cfg.FanoutRate), goal: goalP99,
		}
	case "distinct":
		return scenario{
			name: name, describe: fmt.Sprintf("%d listens, each following its own task (own tenant); every task completed, %d/s",
				cfg.Listeners, cfg.DistinctRate),
			clients: cfg.Listeners, perClient: 1,
			rate: cfg.DistinctRate, duration: durationFor(cfg.Listeners, cfg.DistinctRate), goal: goalP99,
		}
	case "churn":
		return scenario{
			name: name, describe: fmt.Sprintf("%d listens, one task and tenant each; %d completions/s for %v while a client creates %d tasks/s over HTTP",
				cfg.ChurnStreams, cfg.ChurnRate, cfg.ChurnFor, cfg.CreateRate),
			clients: cfg.ChurnStreams, perClient: 1,
			rate: cfg.ChurnRate, duration: cfg.ChurnFor, createRate: cfg.CreateRate, goal: goalChurnP99,
		}
	}
	return scenario{
		name: "latency", describe: fmt.Sprintf("%d listening clients × %d tasks, %d completions/s for %v by a driver in the server process",
			cfg.Clients, cfg.PerClient, cfg.Rate, cfg.Duration),
		clients: cfg.Clients, perClient: cfg.PerClient, rate: cfg.Rate, duration: cfg.Duration, goal: goalP99,
	}
}

// durationFor is how long n completions take at rate per second (at most
// n completions fit in it).
func durationFor(n, rate int) time.Duration {
	return time.Duration(float64(n) / float64(rate) * float64(time.Second))
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// child is the "listenbench serve" subprocess.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	tasks [][]string
	lines chan string // replies to commands
}

// startChild starts the server with clients × perClient tasks and room
// for extra more.
func startChild(ctx context.Context, cfg config, name string, clients, perClient, extra int, stderr io.Writer) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "-addr", "127.0.0.1:0",
		"-clients", strconv.Itoa(clients), "-tasks-per-client", strconv.Itoa(perClient),
		"-extra-capacity", strconv.Itoa(extra), "-max-lifetime", cfg.MaxLifetime.String()}
	if cfg.Profile != "" {
		args = append(args, "-cpuprofile", cfg.Profile+"."+name+".cpu")
	}
	if cfg.H2C {
		args = append(args, "-h2c")
	}
	cmd := exec.Command(exe, args...)
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
	c := &child{cmd: cmd, stdin: stdin, tasks: make([][]string, clients), lines: make(chan string, 1<<16)}
	ready := make(chan string, 1)
	go func() { // ends with the child's stdout
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "task "); ok {
				var n int
				var id string
				fmt.Sscanf(rest, "%d %s", &n, &id)
				c.tasks[n] = append(c.tasks[n], id)
				continue
			}
			if addr, ok := strings.CutPrefix(line, listenPrefix); ok {
				ready <- addr
				continue
			}
			c.lines <- line
		}
	}()
	select {
	case c.addr = <-ready:
		return c, nil
	case <-time.After(2 * time.Minute):
	case <-ctx.Done():
	}
	c.Close()
	return nil, errors.New("the server subprocess did not start")
}

// do sends a command and returns the reply lines up to the one starting
// with last.
func (c *child) do(cmd, last string, timeout time.Duration) ([]string, error) {
	if _, err := fmt.Fprintln(c.stdin, cmd); err != nil {
		return nil, err
	}
	var out []string
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return out, fmt.Errorf("server exited during %q", cmd)
			}
			out = append(out, line)
			if strings.HasPrefix(line, last) {
				return out, nil
			}
		case <-deadline:
			return out, fmt.Errorf("no reply to %q within %v", cmd, timeout)
		}
	}
}

// rssKB reads VmRSS of the child from /proc.
func (c *child) rssKB() (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, errors.New("no VmRSS")
}

// cpu reads the child's user and system CPU time from /proc.
func (c *child) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces), from
	// field 3 on: utime and stime are fields 14 and 15, in clock ticks.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+s) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

// selfCPU returns the harness's own user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Close stops the child: EOF on its stdin, then SIGKILL if it lingers.
func (c *child) Close() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// endAll asks the server to end every listen gracefully and counts the
// streams that received their final result.
func endAll(c *child, ls []*listener) (int, error) {
	if _, err := c.do("close", "closed", time.Minute); err != nil {
		return 0, err
	}
	graceful := 0
	deadline := time.After(time.Minute)
	for _, l := range ls {
		select {
		case <-l.done:
		case <-deadline:
			return graceful, errors.New("streams did not end after Server.Close")
		}
		if l.ended() {
			graceful++
		}
	}
	return graceful, nil
}

// problems verifies every listener's messages and returns the problems.
func problems(ls []*listener) []string {
	var out []string
	for _, l := range ls {
		l.verify()
		l.mu.Lock()
		out = append(out, l.problems...)
		l.mu.Unlock()
	}
	return out
}

// scenario is one latency measurement: the tasks the server creates, the
// listens the harness opens on them, the completions the driver commits,
// and an optional creation load over HTTP running at the same time.
type scenario struct {
	name               string
	describe           string
	clients, perClient int                                 // tasks: perClient for each of clients tenants
	listens            func(tasks [][]string) []listenSpec // nil: one listen per client
	rate               int
	duration           time.Duration
	createRate         int // tools/call task creations per second during the drive
	goal               time.Duration
}

// runLatency runs one latency scenario and reports commit → arrival
// latency over every (task, listener) pair.
func runLatency(ctx context.Context, cfg config, sc scenario, limit uint64, stdout, stderr io.Writer) error {
	fmt.Fprintf(stdout, "%s: %s\n", sc.name, sc.describe)
	extra := 0
	if sc.createRate > 0 {
		extra = int(float64(sc.createRate)*(sc.duration.Seconds()+5)) + 1024
	}
	c, err := startChild(ctx, cfg, sc.name, sc.clients, sc.perClient, extra, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	specs := perClient(c.tasks)
	if sc.listens != nil {
		specs = sc.listens(c.tasks)
	}
	if need := uint64(len(specs) + 256); limit > 0 && limit < need {
		return fmt.Errorf("%s: RLIMIT_NOFILE %d is too low for %d streams", sc.name, limit, len(specs))
	}
	hc := newHTTPClient(cfg.H2C)
	e, err := newReader(cfg)
	if err != nil {
		return err
	}
	if e != nil {
		defer e.stop()
	}
	start := time.Now()
	ls, err := openAll(ctx, hc, e, c.addr, specs, cfg.OpenConc)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	if err != nil {
		fmt.Fprintf(stdout, "  opened %d listens, then: %v\n", len(ls), err)
		return err
	}
	fmt.Fprintf(stdout, "  listens opened             %d in %v\n", len(ls), time.Since(start).Round(time.Millisecond))

	var load *creationLoad
	if sc.createRate > 0 {
		load = startCreationLoad(ctx, c.addr, sc.createRate, sc.duration)
	}
	serverCPU0, _ := c.cpu()
	harnessCPU0 := selfCPU()
	stopProfile, err := profileHarness(cfg, sc.name)
	if err != nil {
		return err
	}
	lines, err := c.do(fmt.Sprintf("drive %d %s", sc.rate, sc.duration), "driven ", sc.duration+time.Minute)
	if load != nil {
		load.wait()
	}
	if err != nil {
		return err
	}
	commits := map[string]time.Time{}
	for _, line := range lines {
		var id string
		var ns int64
		if n, _ := fmt.Sscanf(line, "commit %s %d", &id, &ns); n == 2 {
			commits[id] = time.Unix(0, ns)
		}
	}
	// Every listener following a completed task expects its notification.
	expected := 0
	for _, l := range ls {
		for _, id := range l.ids {
			if _, ok := commits[id]; ok {
				expected++
			}
		}
	}
	// Wait for the notifications (5 s at most after the last commit).
	deadline := time.Now().Add(5 * time.Second)
	arrived := func() int {
		n := 0
		for _, l := range ls {
			l.mu.Lock()
			for id := range l.arrivals {
				if _, ok := commits[id]; ok {
					n++
				}
			}
			l.mu.Unlock()
		}
		return n
	}
	for arrived() < expected && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	serverCPU1, _ := c.cpu()
	harnessCPU := selfCPU() - harnessCPU0
	stopProfile()
	var lat []time.Duration
	last := map[string]time.Duration{} // per completion: its last arrival
	notes := 0
	for _, l := range ls {
		l.mu.Lock()
		notes += l.notes
		for id, at := range l.arrivals {
			if ct, ok := commits[id]; ok {
				lat = append(lat, at.Sub(ct))
				last[id] = max(last[id], at.Sub(ct))
			}
		}
		l.mu.Unlock()
	}
	var spans []time.Duration
	for _, d := range last {
		spans = append(spans, d)
	}
	slices.Sort(spans)
	if cfg.Profile != "" {
		if _, err := c.do("heap "+cfg.Profile+"."+sc.name+".heap", "heap done", time.Minute); err != nil {
			return err
		}
	}
	graceful, endErr := endAll(c, ls)
	slices.Sort(lat)
	if load != nil {
		fmt.Fprintf(stdout, "  creation load              %s\n", load.report())
	}
	fmt.Fprintf(stdout, "  completions committed      %d\n", len(commits))
	if n := len(commits); n > 0 {
		fmt.Fprintf(stdout, "  CPU per completion         server %s, harness %s (from the drive to the last arrival)\n",
			fmtDur((serverCPU1-serverCPU0)/time.Duration(n)), fmtDur(harnessCPU/time.Duration(n)))
	}
	fmt.Fprintf(stdout, "  notifications expected     %d (one completed snapshot per completed task and listener)\n", expected)
	fmt.Fprintf(stdout, "  notifications arrived      %d (missing %d; notifications/tasks received in all: %d)\n", len(lat), expected-len(lat), notes)
	if len(lat) > 0 {
		p99 := quantile(lat, 0.99)
		met := "met"
		if p99 > sc.goal {
			met = "NOT met"
		}
		fmt.Fprintf(stdout, "  commit → arrival latency   p50 %s   p99 %s   max %s   (target p99 ≤ %v: %s)\n",
			fmtDur(quantile(lat, 0.5)), fmtDur(p99), fmtDur(lat[len(lat)-1]), sc.goal, met)
		if cfg.CheckGoals && p99 > sc.goal {
			err = errors.Join(err, fmt.Errorf("%s: p99 latency %v above the %v goal", sc.name, p99, sc.goal))
		}
	}
	if cfg.Each && len(last) > 0 {
		fmt.Fprintf(stdout, "  last arrival, in commit order: %s\n", inCommitOrder(commits, last))
	}
	if len(spans) > 0 {
		fmt.Fprintf(stdout, "  last arrival per commit    p50 %s   p99 %s   max %s   (over %d completions)\n",
			fmtDur(quantile(spans, 0.5)), fmtDur(quantile(spans, 0.99)), fmtDur(spans[len(spans)-1]), len(spans))
	}
	fmt.Fprintf(stdout, "  graceful ends on Close     %d of %d\n\n", graceful, len(ls))
	if p := problems(ls); len(p) > 0 {
		err = errors.Join(err, fmt.Errorf("%s: %d stream problems, first: %s", sc.name, len(p), p[0]))
	}
	if len(lat) != expected {
		err = errors.Join(err, fmt.Errorf("%s: %d notifications missing", sc.name, expected-len(lat)))
	}
	if graceful != len(ls) {
		err = errors.Join(err, fmt.Errorf("%s: %d streams ended without their final result", sc.name, len(ls)-graceful))
	}
	if load != nil && load.failed() > 0 {
		err = errors.Join(err, fmt.Errorf("%s: %d task creations failed", sc.name, load.failed()))
	}
	return errors.Join(err, endErr)
}

// runRSS runs the memory benchmark.
func runRSS(ctx context.Context, cfg config, limit uint64, stdout, stderr io.Writer) error {
	streams := cfg.Streams
	if need := uint64(streams + 256); limit > 0 && limit < need {
		streams = int(limit) - 256
		fmt.Fprintf(stdout, "rss: RLIMIT_NOFILE %d allows %d streams, not %d\n", limit, streams, cfg.Streams)
	}
	fmt.Fprintf(stdout, "rss: %d idle listen streams, one task and one tenant each\n", streams)
	c, err := startChild(ctx, cfg, "rss", streams, 1, 0, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	measure := func() (int, string, error) {
		if _, err := c.do("gc", "gc done", time.Minute); err != nil {
			return 0, "", err
		}
		kb, err := c.rssKB()
		if err != nil {
			return 0, "", err
		}
		st, err := c.do("stats", "stats ", time.Minute)
		if err != nil {
			return 0, "", err
		}
		return kb, st[len(st)-1], nil
	}
	before, statsBefore, err := measure()
	if err != nil {
		return err
	}
	hc := newHTTPClient(cfg.H2C)
	e, err := newReader(cfg)
	if err != nil {
		return err
	}
	if e != nil {
		defer e.stop()
	}
	start := time.Now()
	ls, openErr := openAll(ctx, hc, e, c.addr, perClient(c.tasks), cfg.OpenConc)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	fmt.Fprintf(stdout, "  listens opened             %d in %v\n", len(ls), time.Since(start).Round(time.Millisecond))
	if openErr != nil {
		fmt.Fprintf(stdout, "  opening stopped: %v\n", openErr)
	}
	time.Sleep(2 * time.Second) // let the streams settle
	after, statsAfter, err := measure()
	if err != nil {
		return err
	}
	if cfg.Profile != "" {
		if _, err := c.do("heap "+cfg.Profile+".rss.heap", "heap done", time.Minute); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "  server VmRSS before        %.1f MB  (%s)\n", float64(before)/1024, fmtStats(statsBefore))
	fmt.Fprintf(stdout, "  server VmRSS with streams  %.1f MB  (%s)\n", float64(after)/1024, fmtStats(statsAfter))
	if len(ls) > 0 {
		fmt.Fprintf(stdout, "  per stream                 %.1f KB  (delta %.1f MB / %d)\n",
			float64(after-before)/float64(len(ls)), float64(after-before)/1024, len(ls))
	}
	if cfg.RSSClose {
		return errors.Join(openErr, measureClosed(c, cfg, ls, stdout))
	}
	graceful, endErr := endAll(c, ls)
	fmt.Fprintf(stdout, "  graceful ends on Close     %d of %d\n\n", graceful, len(ls))
	err = errors.Join(openErr, endErr)
	if p := problems(ls); len(p) > 0 {
		err = errors.Join(err, fmt.Errorf("%d stream problems, first: %s", len(p), p[0]))
	}
	return err
}

// measureClosed closes every stream from the client side, waits for the
// server to count none open, and reports its VmRSS and heap after a GC,
// then after returning freed memory to the OS: what the first holds
// beyond the second is the runtime's retained heap, not live memory.
func measureClosed(c *child, cfg config, ls []*listener, stdout io.Writer) error {
	for _, l := range ls {
		l.Close()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := c.do("stats", "stats ", time.Minute)
		if err != nil {
			return err
		}
		var g, heap, stack, open int
		if n, _ := fmt.Sscanf(st[len(st)-1], "stats %d %d %d %d", &g, &heap, &stack, &open); n == 4 && open == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("streams still open a minute after the clients closed them: %s", st[len(st)-1])
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // let the streams' goroutines end
	if cfg.Profile != "" {
		if _, err := c.do("heap "+cfg.Profile+".closed.heap", "heap done", time.Minute); err != nil {
			return err
		}
	}
	for _, step := range []struct{ cmd, reply, label string }{
		{"gc-only", "gc done", "after close, GC"},
		{"gc", "gc done", "after close, GC + FreeOSMemory"},
	} {
		if _, err := c.do(step.cmd, step.reply, time.Minute); err != nil {
			return err
		}
		kb, err := c.rssKB()
		if err != nil {
			return err
		}
		st, err := c.do("mem", "mem ", time.Minute)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  server VmRSS %-31s %.1f MB  (%s)\n", step.label, float64(kb)/1024, fmtMem(st[len(st)-1]))
	}
	fmt.Fprintln(stdout)
	return nil
}

// fmtMem renders a "mem G INUSE IDLE RELEASED STACK" reply.
func fmtMem(line string) string {
	var g, inuse, idle, released, stack int
	if n, _ := fmt.Sscanf(line, "mem %d %d %d %d %d", &g, &inuse, &idle, &released, &stack); n != 5 {
		return line
	}
	mb := func(b int) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf("%d goroutines, heap in use %.1f MB, idle %.1f MB of which released %.1f MB, stacks %.1f MB",
		g, mb(inuse), mb(idle), mb(released), mb(stack))
}

// fmtStats renders a "stats G HEAP STACK LISTENS" reply.
func fmtStats(line string) string {
	var g, heap, stack, open int
	if n, _ := fmt.Sscanf(line, "stats %d %d %d %d", &g, &heap, &stack, &open); n != 4 {
		return line
	}
	return fmt.Sprintf("%d goroutines, heap in use %.1f MB, stacks %.1f MB, %d open listens",
		g, float64(heap)/(1<<20), float64(stack)/(1<<20), open)
}

// profileHarness writes the harness's own CPU profile, from the drive to
// the last arrival, to PREFIX.SCENARIO.harness.cpu when -profile is set;
// stop ends it.
func profileHarness(cfg config, name string) (stop func(), err error) {
	if cfg.Profile == "" {
		return func() {}, nil
	}
	f, err := os.Create(cfg.Profile + "." + name + ".harness.cpu")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// newReader returns the epoll reader when cfg asks for it, else nil.
func newReader(cfg config) (*epollReader, error) {
	if cfg.Reader != "epoll" {
		return nil, nil
	}
	return newEpollReader()
}

// inCommitOrder renders each completion's last arrival, in the order the
// completions were committed, in milliseconds.
func inCommitOrder(commits map[string]time.Time, last map[string]time.Duration) string {
	ids := make([]string, 0, len(last))
	for id := range last {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return commits[a].Compare(commits[b]) })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%.1f", float64(last[id])/float64(time.Millisecond))
	}
	return strings.Join(parts, " ")
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

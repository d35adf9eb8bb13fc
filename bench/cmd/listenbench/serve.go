package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// The serve subprocess talks to the harness in lines. On its standard
// output it writes "task CLIENT ID" for every task it created, then
// "listening on ADDR". On its standard input it reads commands:
//
//	drive RATE DURATION  complete tasks at RATE per second for DURATION,
//	                     then write "commit ID UNIXNANO" per completion and
//	                     "driven N"
//	gc                   collect garbage, return memory to the OS, "gc done"
//	stats                "stats GOROUTINES HEAPINUSE STACKINUSE LISTENS"
//	heap FILE            write a heap profile to FILE, "heap done"
//	close                end every listen gracefully (Server.Close), "closed"
//
// It exits when its standard input reaches EOF, or after -max-lifetime.

const listenPrefix = "listening on "

// benchServer is the server side: a taskwire server with a memory manager
// and one endpoint, "bench" at /mcp, whose tool "job" creates tasks.
type benchServer struct {
	mem    *memory.Manager
	srv    *server.Server
	http   *http.Server
	ln     net.Listener
	origin task.Origin
	tasks  [][]string // per client
	listen *countObserver
}

// countObserver counts open listens.
type countObserver struct {
	mu   sync.Mutex
	open int
}

func (o *countObserver) RequestStarted(_ context.Context, info server.RequestInfo) {
	if info.Method == mcp.MethodSubscriptionsListen {
		o.mu.Lock()
		o.open++
		o.mu.Unlock()
	}
}

func (o *countObserver) RequestFinished(_ context.Context, info server.RequestInfo, _ server.Outcome, _ time.Duration) {
	if info.Method == mcp.MethodSubscriptionsListen {
		o.mu.Lock()
		o.open--
		o.mu.Unlock()
	}
}

func (o *countObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.open
}

// tenant is the tenant (and bearer token, with server.DevAdmission) of a
// client.
func tenant(client int) string { return fmt.Sprintf("c%05d", client) }

// newBenchServer builds the server and creates perClient tasks for each
// of clients tenants.
func newBenchServer(addr string, clients, perClient, extra int, h2c bool) (*benchServer, error) {
	n := clients * perClient
	mem, err := memory.New(memory.Options{Capacity: n + extra + 16, TTL: time.Hour})
	if err != nil {
		return nil, err
	}
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "bench", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	ep.AddRawTaskTool(&mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *server.Request) (*mcp.CallToolResult, *task.Handle, error) {
			t, err := mem.Create(req.TaskCreation())
			return nil, &task.Handle{ID: t.ID()}, err
		})
	obs := &countObserver{}
	srv, err := server.New(server.Options{
		Endpoints:   []*server.Endpoint{ep},
		TaskManager: mem,
		Admission:   server.DevAdmission(),
		Observer:    obs,
		Subscriptions: &server.SubscriptionOptions{
			Authorizer:       server.AllowSubscriptions(time.Hour),
			MaxSubscriptions: max(8192, clients+64),
			// fanout holds every listen as one principal of one tenant.
			MaxPerTenant:    4096,
			MaxPerPrincipal: 4096,
		},
	})
	if err != nil {
		return nil, err
	}
	origin, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "bench", Operation: mcp.MethodToolsCall,
		Tool: "job", Arguments: json.RawMessage(`{}`),
	})
	if err != nil {
		return nil, err
	}
	b := &benchServer{mem: mem, srv: srv, origin: origin, listen: obs}
	for c := range clients {
		var ids []string
		for range perClient {
			t, err := mem.Create(&task.CreationContext{
				Request: task.RequestContext{Endpoint: "bench", Tenant: tenant(c), Principal: tenant(c), ProtocolVersion: mcp.LatestProtocolVersion},
				Origin:  origin,
			})
			if err != nil {
				return nil, err
			}
			ids = append(ids, t.ID())
		}
		b.tasks = append(b.tasks, ids)
	}
	if b.ln, err = loopbackListen(addr); err != nil {
		return nil, err
	}
	b.http = &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	if h2c {
		b.http.Protocols = new(http.Protocols)
		b.http.Protocols.SetHTTP1(true)
		b.http.Protocols.SetUnencryptedHTTP2(true)
	}
	go b.http.Serve(b.ln)
	return b, nil
}

// loopbackListen listens on addr, which must name a loopback host.
func loopbackListen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Sprintf("bad address %q: %v", addr, err)}
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, usageError{fmt.Sprintf("address %q is not a loopback IP address: listenbench only serves on 127.0.0.0/8 or ::1", addr)}
	}
	return net.Listen("tcp", addr)
}

// commit is one completion: when Complete was called for the task.
type commit struct {
	ID string
	At time.Time
}

// drive completes distinct tasks in random order, rate per second for
// duration, and returns the time each Complete call started. The state
// change is committed and published inside the call.
func (b *benchServer) drive(rate int, duration time.Duration) ([]commit, error) {
	var all []string
	for _, ids := range b.tasks {
		all = append(all, ids...)
	}
	n := int(float64(rate) * duration.Seconds())
	if n > len(all) {
		return nil, fmt.Errorf("drive: %d completions need %d tasks, have %d", n, n, len(all))
	}
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	interval := time.Second / time.Duration(rate)
	out := make([]commit, 0, n)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		at := time.Now()
		if _, err := b.mem.Complete(all[i], res, "done"); err != nil {
			return nil, err
		}
		out = append(out, commit{ID: all[i], At: at})
	}
	return out, nil
}

// Close stops serving.
func (b *benchServer) Close() {
	b.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if b.http.Shutdown(ctx) != nil {
		b.http.Close()
	}
}

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard limit (Go already
// does so at start-up on Linux; this makes it explicit) and returns it.
func raiseNoFile() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}

// runServe implements "listenbench serve".
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("listenbench serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on; port 0 picks a free port")
	clients := fs.Int("clients", 1000, "tenants to create tasks for")
	perClient := fs.Int("tasks-per-client", 5, "tasks per tenant")
	extra := fs.Int("extra-capacity", 0, "room for tasks created over HTTP (the creation load)")
	maxLifetime := fs.Duration("max-lifetime", 10*time.Minute, "stop after this long in any case")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	h2c := fs.Bool("h2c", false, "also serve unencrypted HTTP/2 (prior knowledge)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *clients < 1 || *perClient < 1 || *maxLifetime <= 0 || *extra < 0 {
		return usageError{"serve: -clients, -tasks-per-client and -max-lifetime must be positive"}
	}
	raiseNoFile()
	ctx, cancel := context.WithTimeout(ctx, *maxLifetime)
	defer cancel()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	b, err := newBenchServer(*addr, *clients, *perClient, *extra, *h2c)
	if err != nil {
		return err
	}
	defer b.Close()
	out := bufio.NewWriterSize(stdout, 1<<20)
	for c, ids := range b.tasks {
		for _, id := range ids {
			fmt.Fprintf(out, "task %d %s\n", c, id)
		}
	}
	fmt.Fprintf(out, "%s%s\n", listenPrefix, b.ln.Addr())
	out.Flush()

	cmds := make(chan string)
	go func() { // ends with stdin
		defer close(cmds)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
	}()
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case line, ok = <-cmds:
			if !ok {
				return nil
			}
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "drive":
			rate, err1 := strconv.Atoi(f[1])
			d, err2 := time.ParseDuration(f[2])
			if err := errors.Join(err1, err2); err != nil || rate <= 0 {
				return fmt.Errorf("serve: bad command %q", line)
			}
			commits, err := b.drive(rate, d)
			if err != nil {
				return err
			}
			for _, c := range commits {
				fmt.Fprintf(out, "commit %s %d\n", c.ID, c.At.UnixNano())
			}
			fmt.Fprintf(out, "driven %d\n", len(commits))
		case line == "gc":
			runtime.GC()
			debug.FreeOSMemory()
			fmt.Fprintln(out, "gc done")
		case line == "gc-only":
			runtime.GC()
			fmt.Fprintln(out, "gc done")
		case line == "mem":
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(out, "mem %d %d %d %d %d\n", runtime.NumGoroutine(), ms.HeapInuse, ms.HeapIdle, ms.HeapReleased, ms.StackInuse)
		case line == "stats":
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(out, "stats %d %d %d %d\n", runtime.NumGoroutine(), ms.HeapInuse, ms.StackInuse, b.listen.count())
		case len(f) == 2 && f[0] == "heap":
			runtime.GC()
			if err := writeHeapProfile(f[1]); err != nil {
				return err
			}
			fmt.Fprintln(out, "heap done")
		case line == "close":
			b.srv.Close()
			fmt.Fprintln(out, "closed")
		default:
			return fmt.Errorf("serve: unknown command %q", line)
		}
		out.Flush()
	}
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

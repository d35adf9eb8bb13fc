package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// results are the soak's verdicts.
type results struct {
	checks []check
}

// counters is a set of named counts, safe for concurrent use.
type counters struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counters) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[name]++
}

func (c *counters) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name]
}

func (c *counters) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.m))
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, c.m[k])
	}
	return strings.Join(parts, " ")
}

// maxDuration keeps the largest duration it is given.
type maxDuration struct{ v atomic.Int64 }

func (m *maxDuration) observe(d time.Duration) {
	for cur := m.v.Load(); int64(d) > cur && !m.v.CompareAndSwap(cur, int64(d)); cur = m.v.Load() {
	}
}

// soak runs every attack and the ordinary client for cfg.Duration, then
// the newcomer with the attacks still running, and returns the verdicts.
func soak(ctx context.Context, cfg config, srv *server) results {
	attackCtx, stopAttacks := context.WithCancel(ctx)
	defer stopAttacks()
	measureCtx, endMeasure := context.WithTimeout(attackCtx, cfg.Duration)
	defer endMeasure()

	var wg sync.WaitGroup
	spawn := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }

	// The ordinary client connects before the attacks start.
	ordinary := &http.Client{Transport: newTransport(2, ordinaryAddr), Timeout: 10 * time.Second}
	if _, _, err := callTool(ctx, ordinary, srv.addr, "soak-ordinary", "text.stats", map[string]any{"text": "warm up"}, map[string]any{}); err != nil {
		return results{checks: []check{{"start", false, fmt.Sprintf("the first ordinary call failed: %v", err)}}}
	}

	var rssMaxKB atomic.Int64
	spawn(func() { sampleRSS(measureCtx, srv, &rssMaxKB) })
	// The listen hog goes first: once the trickle holds the connection
	// slots, new streams wait for one, and a hog that cannot connect says
	// nothing about the per-principal cap. The others start once it has
	// been refused or has all its streams, or after 10 s.
	hog := &counters{}
	var held []io.Closer
	var heldMu sync.Mutex
	var slots atomic.Int64
	hogClient := &http.Client{Transport: newTransport(16, hogAddr)}
	for i := range 16 {
		spawn(func() { listenHog(attackCtx, cfg, hogClient, srv.addr, i, hog, &slots, &held, &heldMu) })
	}
	for start := time.Now(); time.Since(start) < 10*time.Second && hog.get("429") == 0 && hog.get("held") < cfg.Listens; {
		time.Sleep(50 * time.Millisecond)
	}
	idle := &counters{}
	spawn(func() { idleWaves(measureCtx, attackCtx, cfg, srv.addr, idle) })
	trickle := &counters{}
	var longest maxDuration
	for i := range cfg.Trickle {
		spawn(func() { trickler(attackCtx, srv.addr, attackerAddr(1, i), trickle, &longest) })
	}
	flood := &counters{}
	floodClient := &http.Client{Transport: newTransport(4, floodAddr), Timeout: 30 * time.Second}
	for range 2 {
		spawn(func() { flooder(attackCtx, floodClient, srv.addr, flood) })
	}

	lat, ordErrs := ordinaryLoop(measureCtx, ordinary, srv.addr)
	newcomer := newcomerCheck(ctx, srv.addr)

	stopAttacks()
	// Ends every held stream, so that the hog's goroutines can return.
	heldMu.Lock()
	for _, c := range held {
		c.Close()
	}
	heldMu.Unlock()
	wg.Wait()
	ordinary.CloseIdleConnections()

	var r results
	rss := rssMaxKB.Load() / 1024
	r.checks = append(r.checks, check{"rss", rss < int64(cfg.MaxRSSMB),
		fmt.Sprintf("peak VmRSS %d MB (limit %d MB)", rss, cfg.MaxRSSMB)})
	slices.Sort(lat)
	p50, p99, worst := quantile(lat, 0.50), quantile(lat, 0.99), quantile(lat, 1)
	r.checks = append(r.checks, check{"p99", len(lat) > 0 && p99 < cfg.MaxP99 && orNone(ordErrs) == "none",
		fmt.Sprintf("%d ordinary calls: p50 %v, p99 %v, max %v (limit p99 %v); errors: %s",
			len(lat), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), worst.Round(time.Millisecond), cfg.MaxP99, orNone(ordErrs))})
	r.checks = append(r.checks, check{"idle", idle.get("unanswered") == 0,
		fmt.Sprintf("%d waves of %d connections announcing 10 MiB: %s", cfg.Waves, cfg.Idle, idle.String())})
	r.checks = append(r.checks, check{"trickle", cfg.Trickle == 0 || trickle.get("cut") > 0,
		fmt.Sprintf("%d connections at 1 byte/s: %s; longest a connection was held %v (body timeout %v; the time waiting for a connection slot counts)",
			cfg.Trickle, trickle.String(), time.Duration(longest.v.Load()).Round(100*time.Millisecond), cfg.BodyTimeout)})
	r.checks = append(r.checks, check{"flood", flood.get("429") > 0 && flood.get("429-without-retry-after") == 0,
		"creation flood (2 clients, seconds 0): " + flood.String()})
	r.checks = append(r.checks, check{"listens", hog.get("429") > 0,
		fmt.Sprintf("listen hog, 9 Bearer names, at most %d streams: %s", cfg.Listens, hog.String())})
	r.checks = append(r.checks, newcomer)
	return r
}

func orNone(c *counters) string {
	if s := c.String(); s != "" {
		return s
	}
	return "none"
}

// sampleRSS records the server's peak VmRSS every 200 ms.
func sampleRSS(ctx context.Context, srv *server, peak *atomic.Int64) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if kb, err := srv.rssKB(); err == nil && int64(kb) > peak.Load() {
			peak.Store(int64(kb))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// announce dials addr from local and sends the headers of a tools/call
// announcing contentLength bytes, then the first bytes of the body.
func announce(ctx context.Context, addr string, local net.IP, contentLength int) (net.Conn, error) {
	c, err := dialerFrom(local).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"+
		"Mcp-Name: text.stats\r\nContent-Length: %d\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,", contentLength)
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// awaitClose reads from c until the server answers or closes it, and
// closes the returned channel then.
func awaitClose(c net.Conn) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, c)
	}()
	return done
}

// idleWaves opens cfg.Waves waves of cfg.Idle connections, spread over the
// measured time, that announce 10 MiB and then send nothing. A connection
// that the server has neither answered nor closed when the attacks end
// counts as unanswered if it was sent more than the body timeout and 2 s
// before, as pending otherwise.
func idleWaves(measureCtx, attackCtx context.Context, cfg config, addr string, st *counters) {
	if cfg.Waves == 0 {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	gap := cfg.Duration / time.Duration(cfg.Waves+1)
	for w := range cfg.Waves {
		if w > 0 {
			select {
			case <-measureCtx.Done():
				return
			case <-time.After(gap):
			}
		}
		for i := range cfg.Idle {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := announce(attackCtx, addr, attackerAddr(2, i), 10<<20)
				if err != nil {
					st.add("dial-error")
					return
				}
				defer c.Close()
				sent := time.Now()
				st.add("sent")
				select {
				case <-awaitClose(c):
					st.add("cut")
				case <-attackCtx.Done():
					if time.Since(sent) > cfg.BodyTimeout+2*time.Second {
						st.add("unanswered")
					} else {
						st.add("pending")
					}
				}
			}()
		}
	}
}

// trickler sends a body at one byte a second from local until the server
// cuts the connection off, then starts again, until ctx ends.
func trickler(ctx context.Context, addr string, local net.IP, st *counters, longest *maxDuration) {
	for ctx.Err() == nil {
		began := time.Now()
		c, err := announce(ctx, addr, local, 1000)
		if err != nil {
			if ctx.Err() == nil {
				st.add("dial-error")
				sleep(ctx, 200*time.Millisecond)
			}
			continue
		}
		st.add("connections")
		closed := awaitClose(c)
		tick := time.NewTicker(time.Second)
	trickle:
		for {
			select {
			case <-closed:
				st.add("cut")
				longest.observe(time.Since(began))
				break trickle
			case <-ctx.Done():
				break trickle
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					st.add("cut")
					longest.observe(time.Since(began))
					break trickle
				}
			}
		}
		tick.Stop()
		c.Close()
		<-closed
	}
}

// flooder creates tasks as fast as the server lets it, and counts the
// answers by status.
func flooder(ctx context.Context, hc *http.Client, addr string, st *counters) {
	for ctx.Err() == nil {
		status, _, err := createTask(ctx, hc, addr, "soak-flood")
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			st.add("created")
		case status == http.StatusTooManyRequests:
			st.add("429")
		case status != 0:
			st.add(fmt.Sprint(status))
		default:
			st.add("error")
			sleep(ctx, 100*time.Millisecond)
		}
	}
}

// listenHog opens listen streams as one of nine Bearer names, in turn,
// until cfg.Listens streams are held or ctx ends, and holds them.
func listenHog(ctx context.Context, cfg config, hc *http.Client, addr string, worker int, st *counters, slots *atomic.Int64, held *[]io.Closer, mu *sync.Mutex) {
	for i := 0; ctx.Err() == nil; i++ {
		if slots.Add(1) > int64(cfg.Listens) {
			slots.Add(-1)
			return
		}
		name := fmt.Sprintf("soak-hog-%d", (worker+i)%9+1)
		// The open may take 30 s; the stream then lives on in its context,
		// which ends only when the stream is closed: canceling the context
		// of a request closes its response body.
		octx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(30*time.Second, cancel)
		status, stream, err := openListen(octx, hc, addr, name, nil)
		timer.Stop()
		if err != nil {
			cancel()
		}
		if err == nil {
			mu.Lock()
			*held = append(*held, closeWith{stream, cancel})
			mu.Unlock()
			st.add("held")
			continue
		}
		slots.Add(-1)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errRefused):
			st.add(fmt.Sprint(status))
		default:
			st.add("error")
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// ordinaryLoop calls text.stats every 10 ms until ctx ends and returns
// the latencies of the calls that succeeded and the failures by kind.
func ordinaryLoop(ctx context.Context, hc *http.Client, addr string) ([]time.Duration, *counters) {
	var lat []time.Duration
	errs := &counters{}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return lat, errs
		case <-t.C:
		}
		began := time.Now()
		status, _, err := callTool(context.Background(), hc, addr, "soak-ordinary", "text.stats", map[string]any{"text": "an ordinary call"}, map[string]any{})
		switch {
		case err == nil:
			lat = append(lat, time.Since(began))
		case status != 0:
			errs.add(fmt.Sprint(status))
		default:
			errs.add("error")
		}
	}
}

// newcomerCheck serves a brand-new client, on new connections, with the
// attacks still running: an inline call, a task, and a listen on it.
func newcomerCheck(ctx context.Context, addr string) check {
	hc := &http.Client{Transport: newTransport(2, newcomerAddr)}
	defer hc.CloseIdleConnections()
	bearer := fmt.Sprintf("soak-newcomer-%d", os.Getpid())
	var parts []string
	ok := true
	step := func(name string, f func(context.Context) error) {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		began := time.Now()
		if err := f(sctx); err != nil {
			ok = false
			parts = append(parts, fmt.Sprintf("%s FAILED after %v: %v", name, time.Since(began).Round(time.Millisecond), err))
			return
		}
		parts = append(parts, fmt.Sprintf("%s in %v", name, time.Since(began).Round(time.Millisecond)))
	}
	step("inline call", func(ctx context.Context) error {
		_, _, err := callTool(ctx, hc, addr, bearer, "text.stats", map[string]any{"text": "hello"}, map[string]any{})
		return err
	})
	var id string
	step("task created", func(ctx context.Context) error {
		var err error
		_, id, err = createTask(ctx, hc, addr, bearer)
		return err
	})
	step("listen opened", func(ctx context.Context) error {
		var ids []string
		if id != "" {
			ids = []string{id}
		}
		_, stream, err := openListen(ctx, hc, addr, bearer, ids)
		if err == nil {
			stream.Close()
		}
		return err
	})
	return check{"newcomer", ok, strings.Join(parts, "; ")}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// closeWith closes a stream, then ends the context it was opened in.
type closeWith struct {
	io.Closer
	cancel context.CancelFunc
}

func (c closeWith) Close() error {
	err := c.Closer.Close()
	c.cancel()
	return err
}

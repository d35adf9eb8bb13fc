package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// creationLoad creates tasks over HTTP (tools/call of the "job" tool) at a
// steady rate, from a pool of keep-alive connections, while a latency
// scenario runs. Its tasks are followed by nobody: the load stands for
// the traffic of other clients on the same node.
type creationLoad struct {
	wg sync.WaitGroup

	mu        sync.Mutex
	created   int
	limited   int // HTTP 429: a creation limit answered
	fails     int
	firstFail string
	late      int // ticks dropped because every worker was busy
	started   time.Time
	elapsed   time.Duration
}

// creationWorkers is the number of concurrent creators (and connections).
const creationWorkers = 16

// startCreationLoad starts creating rate tasks per second for duration. It
// stops by itself; wait returns when it has.
func startCreationLoad(ctx context.Context, addr string, rate int, duration time.Duration) *creationLoad {
	l := &creationLoad{started: time.Now()}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: creationWorkers,
	}}
	ticks := make(chan struct{}, creationWorkers)
	ctx, cancel := context.WithTimeout(ctx, duration)
	for w := range creationWorkers {
		l.wg.Add(1)
		go func() { // ends when ticks is closed
			defer l.wg.Done()
			for range ticks {
				l.createOne(hc, addr, w)
			}
		}()
	}
	l.wg.Add(1)
	go func() { // ends at the end of duration
		defer l.wg.Done()
		defer cancel()
		defer close(ticks)
		interval := time.Second / time.Duration(rate)
		for i := 0; ; i++ {
			next := l.started.Add(time.Duration(i) * interval)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
			select {
			case ticks <- struct{}{}:
			default:
				l.mu.Lock()
				l.late++
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// wait waits for the load to stop.
func (l *creationLoad) wait() {
	l.wg.Wait()
	l.mu.Lock()
	if l.elapsed == 0 {
		l.elapsed = time.Since(l.started)
	}
	l.mu.Unlock()
}

// createBody is a tools/call of "job" declaring the Tasks extension, which
// makes the server create a task.
func createBody(id int) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{
			"name": "job", "arguments": map[string]any{},
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			},
		},
	})
	return b
}

func (l *creationLoad) createOne(hc *http.Client, addr string, worker int) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(createBody(worker+1)))
	if err != nil {
		l.fail(err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, "job")
	req.Header.Set("Authorization", fmt.Sprintf("Bearer creator%02d", worker))
	resp, err := hc.Do(req)
	if err != nil {
		l.fail(err.Error())
		return
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	var m struct {
		Result *struct {
			ResultType string `json:"resultType"`
		} `json:"result"`
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		l.mu.Lock()
		l.limited++
		l.mu.Unlock()
	case resp.StatusCode != http.StatusOK || json.Unmarshal(b, &m) != nil || m.Result == nil || m.Result.ResultType != "task":
		l.fail(fmt.Sprintf("HTTP %d %.200s", resp.StatusCode, b))
	default:
		l.mu.Lock()
		l.created++
		l.mu.Unlock()
	}
}

func (l *creationLoad) fail(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fails == 0 {
		l.firstFail = msg
	}
	l.fails++
}

func (l *creationLoad) failed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fails
}

// report summarizes the load.
func (l *creationLoad) report() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := fmt.Sprintf("%d tasks created in %v (%.0f/s), %d answered 429, %d ticks skipped (all %d creators busy), %d failed",
		l.created, l.elapsed.Round(time.Millisecond), float64(l.created)/l.elapsed.Seconds(), l.limited, l.late, creationWorkers, l.fails)
	if l.fails > 0 {
		s += ", first: " + l.firstFail
	}
	return s
}

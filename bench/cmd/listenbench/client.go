package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// listener is one client's subscriptions/listen stream over real HTTP. After
// the acknowledgement a goroutine reads the stream and records when each
// task's completed notification arrives.
type listener struct {
	client int
	ids    []string
	body   io.ReadCloser
	done   chan struct{} // closed when the stream ends

	mu       sync.Mutex
	arrivals map[string]time.Time // first completed notification per task
	notes    int                  // notifications/tasks received
	problems []string
	graceful bool // the final result arrived
}

// newHTTPClient returns a client that opens one connection per stream.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
		ForceAttemptHTTP2:   false,
	}}
}

// listenBody is a 2026-07-28 listen request declaring the Tasks extension.
func listenBody(id int, taskIDs []string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
		"params": map[string]any{
			"notifications": map[string]any{"taskIds": taskIDs},
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			},
		},
	})
	return b
}

// sseMessage is the part of a stream message the benchmark checks.
type sseMessage struct {
	Method string `json:"method"`
	Params struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// openListener opens client's listen for ids and waits for the
// acknowledgement, which must list every ID.
func openListener(ctx context.Context, hc *http.Client, addr string, client int, ids []string) (*listener, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(listenBody(client+1, ids)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer "+tenant(client))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("listen of client %d: HTTP %d %s", client, resp.StatusCode, b)
	}
	l := &listener{client: client, ids: ids, body: resp.Body, done: make(chan struct{}), arrivals: map[string]time.Time{}}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("listen of client %d: no acknowledgement: %w", client, err)
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var m sseMessage
		if err := json.Unmarshal(data, &m); err != nil || m.Method != "notifications/subscriptions/acknowledged" {
			resp.Body.Close()
			return nil, fmt.Errorf("listen of client %d: first message %.200s", client, data)
		}
		if len(m.Params.Notifications.TaskIDs) != len(ids) {
			resp.Body.Close()
			return nil, fmt.Errorf("listen of client %d: acknowledged %d of %d tasks", client, len(m.Params.Notifications.TaskIDs), len(ids))
		}
		break
	}
	go l.read(br) // ends with the stream
	return l, nil
}

func (l *listener) read(br *bufio.Reader) {
	defer close(l.done)
	for {
		line, err := br.ReadBytes('\n')
		arrived := time.Now()
		if err != nil {
			if !l.ended() && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "closed") {
				l.problem("stream broke: %v", err)
			}
			return
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var m sseMessage
		if err := json.Unmarshal(data, &m); err != nil {
			l.problem("bad message %.100s", data)
			continue
		}
		l.mu.Lock()
		switch {
		case m.Method == "notifications/tasks":
			l.notes++
			if m.Params.Status == "completed" {
				if _, seen := l.arrivals[m.Params.TaskID]; !seen {
					l.arrivals[m.Params.TaskID] = arrived
				}
			}
		case m.Method == "" && m.Result != nil:
			l.graceful = true
		default:
			l.problems = append(l.problems, fmt.Sprintf("unexpected message %.100s", data))
		}
		l.mu.Unlock()
	}
}

func (l *listener) ended() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.graceful
}

func (l *listener) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// Close disconnects the client.
func (l *listener) Close() { l.body.Close() }

// openAll opens a listener per client, conc at a time. It returns the
// listeners opened before the first failure, and that failure.
func openAll(ctx context.Context, hc *http.Client, addr string, tasks [][]string, conc int) ([]*listener, error) {
	out := make([]*listener, len(tasks))
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, conc)
	for c := range tasks {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			l, err := openListener(ctx, hc, addr, c, tasks[c])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out[c] = l
		}()
	}
	wg.Wait()
	var opened []*listener
	for _, l := range out {
		if l != nil {
			opened = append(opened, l)
		}
	}
	return opened, firstErr
}

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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// listener is one client's subscriptions/listen stream over real HTTP. After
// the acknowledgement a goroutine reads the stream and records when each
// task's completed notification arrives.
type listener struct {
	client int
	ids    []string
	body   io.Closer     // ends the stream
	done   chan struct{} // closed when the stream ends

	mu       sync.Mutex
	arrivals map[string]time.Time // first completed notification per task
	notes    int                  // notifications/tasks received
	problems []string
	graceful bool     // the final result arrived
	raw      [][]byte // messages not yet checked by verify
}

// newHTTPClient returns nil (each stream on its own HTTP/1.1 connection,
// see send) or, with h2c, a client that multiplexes the streams over
// unencrypted HTTP/2 connections (prior knowledge).
func newHTTPClient(h2c bool) *http.Client {
	if !h2c {
		return nil
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
		ForceAttemptHTTP2:   false,
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
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

// send sends req over hc or, when hc is nil, on a TCP connection of its
// own whose response is read directly, without a client transport's
// connection machinery (less CPU per message for the harness, which shares
// the machine with the server). Closing the returned closer ends the
// stream.
func send(ctx context.Context, hc *http.Client, addr string, req *http.Request) (*http.Response, io.Closer, error) {
	if hc != nil {
		resp, err := hc.Do(req)
		if err != nil {
			return nil, nil, err
		}
		return resp, resp.Body, nil
	}
	conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return resp, conn, nil
}

// openListener opens client's listen for ids, with JSON-RPC id rpcID, and
// waits for the acknowledgement, which must list every ID.
func openListener(ctx context.Context, hc *http.Client, addr string, rpcID, client int, ids []string) (*listener, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(listenBody(rpcID, ids)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
	req.Header.Set(mcp.HeaderMethod, "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer "+tenant(client))
	resp, closer, err := send(ctx, hc, addr, req)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*listener, error) {
		closer.Close()
		return nil, fmt.Errorf("listen of client %d: "+format, append([]any{client}, args...)...)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fail("HTTP %d %s", resp.StatusCode, b)
	}
	l := &listener{client: client, ids: ids, body: closer, done: make(chan struct{}), arrivals: map[string]time.Time{}}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return fail("no acknowledgement: %w", err)
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		if err := checkAck(data, len(ids)); err != nil {
			return fail("%v", err)
		}
		break
	}
	go l.read(br) // ends with the stream
	return l, nil
}

// checkAck checks that data is the acknowledgement of a listen of n task
// IDs, all accepted.
func checkAck(data []byte, n int) error {
	var m sseMessage
	if err := json.Unmarshal(data, &m); err != nil || m.Method != "notifications/subscriptions/acknowledged" {
		return fmt.Errorf("first message %.200s", data)
	}
	if len(m.Params.Notifications.TaskIDs) != n {
		return fmt.Errorf("acknowledged %d of %d tasks", len(m.Params.Notifications.TaskIDs), n)
	}
	return nil
}

// read records each message's arrival. It only scans a message for its
// kind, task ID and status, without decoding it, so that the harness spends
// as little CPU as possible while the server delivers (the clients share
// the machine with the server); verify decodes and checks every message
// afterwards.
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
		l.record(data, arrived)
	}
}

// record keeps one data line that arrived at arrived, and notes a
// completed notification's arrival and the final result.
func (l *listener) record(data []byte, arrived time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.raw = append(l.raw, data)
	switch {
	case bytes.Contains(data, []byte(`"method":"notifications/tasks"`)):
		l.notes++
		if bytes.Contains(data, []byte(`"status":"completed"`)) {
			id := scanString(data, `"taskId":"`)
			if _, seen := l.arrivals[id]; !seen {
				l.arrivals[id] = arrived
			}
		}
	case !bytes.Contains(data, []byte(`"method":`)) && bytes.Contains(data, []byte(`"result":`)):
		l.graceful = true
	}
}

// scanString returns the JSON string value that follows key in data (task
// IDs need no escaping).
func scanString(data []byte, key string) string {
	_, rest, ok := bytes.Cut(data, []byte(key))
	if !ok {
		return ""
	}
	v, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(v)
}

// verify decodes every message not yet checked, and records a problem for
// anything that is not a notifications/tasks of a followed task or the
// final result, or that the scan in read got wrong.
func (l *listener) verify() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, data := range l.raw {
		var m sseMessage
		if err := json.Unmarshal(data, &m); err != nil {
			l.problems = append(l.problems, fmt.Sprintf("bad message %.100s", data))
			continue
		}
		switch {
		case m.Method == "notifications/tasks":
			if !slices.Contains(l.ids, m.Params.TaskID) {
				l.problems = append(l.problems, fmt.Sprintf("notification for a task not followed: %.100s", data))
			}
			if _, seen := l.arrivals[m.Params.TaskID]; m.Params.Status == "completed" && !seen {
				l.problems = append(l.problems, fmt.Sprintf("completed notification not recorded: %.100s", data))
			}
		case m.Method == "" && m.Result != nil:
			if !l.graceful {
				l.problems = append(l.problems, fmt.Sprintf("final result not recorded: %.100s", data))
			}
		default:
			l.problems = append(l.problems, fmt.Sprintf("unexpected message %.100s", data))
		}
	}
	l.raw = nil
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

// listenSpec is one listen to open: the client (tenant and bearer name)
// it acts for and the task IDs it follows.
type listenSpec struct {
	client int
	ids    []string
}

// perClient returns one listen per client, following that client's tasks.
func perClient(tasks [][]string) []listenSpec {
	out := make([]listenSpec, len(tasks))
	for c, ids := range tasks {
		out[c] = listenSpec{client: c, ids: ids}
	}
	return out
}

// openAll opens every listen of specs, conc at a time, read by its own
// goroutine or, with e, by e. It returns the listeners opened before the
// first failure, and that failure.
func openAll(ctx context.Context, hc *http.Client, e *epollReader, addr string, specs []listenSpec, conc int) ([]*listener, error) {
	out := make([]*listener, len(specs))
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, conc)
	for i, spec := range specs {
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
			var l *listener
			var err error
			if e != nil {
				l, err = e.openRaw(addr, i+1, spec.client, spec.ids)
			} else {
				l, err = openListener(ctx, hc, addr, i+1, spec.client, spec.ids)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out[i] = l
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

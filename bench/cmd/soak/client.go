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
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Loopback addresses of the soak's clients: the server bounds connections,
// sessions and listens per client address, so each client connects from
// its own, as it would over a network, and the attackers that stand for
// many slow clients spread over many (see attackerAddr).
var (
	ordinaryAddr = net.IPv4(127, 0, 0, 2)
	newcomerAddr = net.IPv4(127, 0, 0, 3)
	hogAddr      = net.IPv4(127, 0, 0, 4)
	floodAddr    = net.IPv4(127, 0, 0, 5)
)

// attackerAddr is the loopback address of the i-th connection of an attack
// of many clients: 127.net.x.y, 250 connections to an x.
func attackerAddr(net8 byte, i int) net.IP {
	return net.IPv4(127, net8, byte(i/250%250), byte(i%250+1))
}

// dialerFrom dials from the loopback address local.
func dialerFrom(local net.IP) *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, LocalAddr: &net.TCPAddr{IP: local}}
}

// newTransport returns a transport without proxies or HTTP/2 that keeps
// up to idle connections per host and connects from local.
func newTransport(idle int, local net.IP) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         dialerFrom(local).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: idle,
		ForceAttemptHTTP2:   false,
	}
}

// taskCaps declares the Tasks extension.
var taskCaps = map[string]any{"extensions": map[string]any{mcp.ExtensionTasks: map[string]any{}}}

// body is a 2026-07-28 request of method with params, whose _meta declares
// caps.
func body(id int64, method string, params map[string]any, caps map[string]any) []byte {
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcp.LatestProtocolVersion,
		"io.modelcontextprotocol/clientCapabilities": caps,
	}}
	for k, v := range params {
		p[k] = v
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	return b
}

// post sends a request to the node's endpoint as the Bearer name (none
// when empty). name is the Mcp-Name header, if the method needs one.
func post(ctx context.Context, hc *http.Client, addr, bearer, method, name string, b []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LatestProtocolVersion)
	req.Header.Set(mcp.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcp.HeaderName, name)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return hc.Do(req)
}

// rpcResponse is the part of a JSON-RPC response the soak checks.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *mcp.Error      `json:"error"`
}

// callTool sends tools/call and returns the HTTP status and the result;
// a JSON-RPC error or a tool error is an error.
func callTool(ctx context.Context, hc *http.Client, addr, bearer, tool string, args any, caps map[string]any) (int, json.RawMessage, error) {
	res, err := post(ctx, hc, addr, bearer, mcp.MethodToolsCall, tool,
		body(1, mcp.MethodToolsCall, map[string]any{"name": tool, "arguments": args}, caps))
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return res.StatusCode, nil, err
	}
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, nil, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return res.StatusCode, nil, fmt.Errorf("response %.100s: %w", b, err)
	}
	if r.Error != nil {
		return res.StatusCode, nil, r.Error
	}
	var tr struct {
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(r.Result, &tr) == nil && tr.IsError {
		return res.StatusCode, nil, fmt.Errorf("tool error: %.200s", r.Result)
	}
	return res.StatusCode, r.Result, nil
}

// createTask creates a reports.generate task and returns its ID.
func createTask(ctx context.Context, hc *http.Client, addr, bearer string) (int, string, error) {
	status, result, err := callTool(ctx, hc, addr, bearer, "reports.generate",
		map[string]any{"accountId": "soak", "rows": 10, "seconds": 0}, taskCaps)
	if err != nil {
		return status, "", err
	}
	var h mcp.CreateTaskResult
	if err := json.Unmarshal(result, &h); err != nil || h.ResultType != mcp.ResultTask || h.TaskID == "" {
		return status, "", fmt.Errorf("not a task handle: %.200s", result)
	}
	return status, h.TaskID, nil
}

// errRefused is a listen answered with an HTTP error.
var errRefused = errors.New("listen refused")

// openListen opens a subscriptions/listen stream for taskIDs and waits for
// its acknowledgement. The caller closes the returned body. A refusal
// returns the status and an error wrapping errRefused.
func openListen(ctx context.Context, hc *http.Client, addr, bearer string, taskIDs []string) (int, io.ReadCloser, error) {
	if taskIDs == nil {
		taskIDs = []string{}
	}
	res, err := post(ctx, hc, addr, bearer, mcp.MethodSubscriptionsListen, "",
		body(1, mcp.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"taskIds": taskIDs}}, taskCaps))
	if err != nil {
		return 0, nil, err
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		res.Body.Close()
		return res.StatusCode, nil, fmt.Errorf("%w: HTTP %d %.200s", errRefused, res.StatusCode, b)
	}
	br := bufio.NewReader(res.Body)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			res.Body.Close()
			return res.StatusCode, nil, fmt.Errorf("listen: no acknowledgement: %w", err)
		}
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(data, &m) != nil || m.Method != "notifications/subscriptions/acknowledged" {
				res.Body.Close()
				return res.StatusCode, nil, fmt.Errorf("listen: first message %.200s", data)
			}
			return res.StatusCode, res.Body, nil
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The session-bound targets of the legacy-tools-call scenario answer the
// tools/call a 2025-11-25 client sends inside the session it opened with
// initialize: the harness opens one session per target before load, and
// every wrk connection replays the call with that session's Mcp-Session-Id.

// sessionPlaceholder stands for the session ID in printed requests.
const sessionPlaceholder = "SESSION-ID"

// legacyInitializeRequest is the initialize of a 2025-11-25 client that
// declares no capabilities.
func legacyInitializeRequest() request {
	return request{
		Method: "POST",
		Path:   endpointPath,
		Headers: []header{
			{"Content-Type", "application/json"},
			{"Accept", "application/json, text/event-stream"},
		},
		Body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyProtocolVersion + `",` +
			`"capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}`,
	}
}

// legacySessionRequest is a POST inside the session sessionID.
func legacySessionRequest(sessionID, body string) request {
	return request{
		Method: "POST",
		Path:   endpointPath,
		Headers: []header{
			{"Content-Type", "application/json"},
			{"Accept", "application/json, text/event-stream"},
			{"MCP-Protocol-Version", legacyProtocolVersion},
			{"Mcp-Session-Id", sessionID},
		},
		Body: body,
	}
}

// legacySessionToolsCallRequest is the request replayed against a
// session-bound target: the same body as gosdk-legacy's, inside a session.
func legacySessionToolsCallRequest(sessionID string) request {
	return legacySessionRequest(sessionID, goSDKLegacyRequest().Body)
}

// openLegacySession performs the 2025-11-25 handshake against the server
// at baseURL: initialize, which must answer HTTP 200 with an
// Mcp-Session-Id and protocol version 2025-11-25, then
// notifications/initialized in that session, which must answer 202. It
// returns the session ID.
func openLegacySession(ctx context.Context, client *http.Client, baseURL string) (string, error) {
	resp, body, err := sendFull(ctx, client, baseURL, legacyInitializeRequest())
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("initialize: HTTP status %d; body: %s", resp.StatusCode, truncate(body, 512))
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return "", fmt.Errorf("initialize: no Mcp-Session-Id header; body: %s", truncate(body, 512))
	}
	msg, err := jsonRPCMessage(resp.Header.Get("Content-Type"), body)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &init); err != nil || init.Result == nil || init.Result.ProtocolVersion != legacyProtocolVersion {
		return "", fmt.Errorf("initialize: want a result with protocolVersion %s; body: %s", legacyProtocolVersion, truncate(body, 512))
	}
	resp, body, err = sendFull(ctx, client, baseURL,
		legacySessionRequest(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return "", fmt.Errorf("notifications/initialized: %w", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("notifications/initialized: HTTP status %d, want 202; body: %s", resp.StatusCode, truncate(body, 512))
	}
	return id, nil
}

// sendFull is send with the whole response head.
func sendFull(ctx context.Context, client *http.Client, baseURL string, req request) (*http.Response, []byte, error) {
	hreq, err := http.NewRequestWithContext(ctx, req.Method, baseURL+req.Path, strings.NewReader(req.Body))
	if err != nil {
		return nil, nil, fmt.Errorf("build request: %w", err)
	}
	for _, h := range req.Headers {
		hreq.Header.Set(h.Name, h.Value)
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, nil, fmt.Errorf("send request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("read response: %w", err)
	}
	return resp, body, nil
}

// jsonRPCMessage returns the JSON-RPC response in body: the body itself
// for application/json, or the data of the SSE event that carries a
// response (an "id" with a "result" or an "error") for text/event-stream,
// which a 2025 server may choose for any request.
func jsonRPCMessage(contentType string, body []byte) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("Content-Type %q: %w", contentType, err)
	}
	switch mt {
	case "application/json":
		return body, nil
	case "text/event-stream":
		for _, event := range bytes.Split(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
			var data [][]byte
			for _, line := range bytes.Split(event, []byte("\n")) {
				if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
					data = append(data, bytes.TrimPrefix(d, []byte(" ")))
				}
			}
			msg := bytes.Join(data, []byte("\n"))
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(msg, &probe) == nil && len(probe.ID) > 0 && (probe.Result != nil || probe.Error != nil) {
				return msg, nil
			}
		}
		return nil, fmt.Errorf("no JSON-RPC response in the event stream")
	}
	return nil, fmt.Errorf("Content-Type %q, want application/json or text/event-stream", contentType)
}

// legacyToolsCallExpectation is the expectation of the session-bound
// targets: the successful test_simple_text result in 2025 shape (no
// resultType), as JSON or as one SSE event.
func legacyToolsCallExpectation() expectation {
	return expectation{
		What:     "successful 2025-11-25 tools/call result in the session",
		Check:    checkLegacyToolsCallResponse,
		Contains: []string{expectedText},
	}
}

// checkLegacyToolsCallResponse validates one response to the session-bound
// tools/call: HTTP 200 and the checks of checkToolsCallResponse on the
// JSON-RPC message, whose result must not carry resultType.
func checkLegacyToolsCallResponse(status int, contentType string, body []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("HTTP status %d, want 200", status)
	}
	msg, err := jsonRPCMessage(contentType, body)
	if err != nil {
		return err
	}
	if err := checkToolsCallResponse(status, "application/json", msg); err != nil {
		return err
	}
	var shape struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(msg, &shape); err != nil {
		return fmt.Errorf("decode JSON-RPC response: %w", err)
	}
	if _, ok := shape.Result["resultType"]; ok {
		return fmt.Errorf("a 2025-11-25 result carries resultType")
	}
	return nil
}

// newGoSDKStatefulHandler builds the go-sdk server of the gosdk target with
// its streamable HTTP handler in stateful mode (sessions, the 2025 way),
// with plain JSON responses: go-sdk's fastest configuration for the
// session-bound request.
func newGoSDKStatefulHandler() (http.Handler, error) {
	server := newGoSDKServer()
	handler := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{JSONResponse: true},
	)
	return mountAt(endpointPath, handler), nil
}

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
)

// toolsCallResponse is the subset of a JSON-RPC tools/call response that
// verification looks at.
type toolsCallResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool   `json:"isError"`
		ResultType string `json:"resultType"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// verify sends req once to the server at baseURL with a Go HTTP client and
// checks that the answer is the successful test_simple_text result:
// HTTP 200, an application/json body holding a JSON-RPC response with id 1,
// no error, and exactly the expected text content. It returns the response
// body so that callers can show it.
func verify(ctx context.Context, client *http.Client, baseURL string, req request) ([]byte, error) {
	return verifyExpect(ctx, client, baseURL, req, toolsCallExpectation())
}

// verifyExpect sends req once to the server at baseURL and checks the answer
// with exp.Check. It returns the response body so that callers can show it.
func verifyExpect(ctx context.Context, client *http.Client, baseURL string, req request, exp expectation) ([]byte, error) {
	status, contentType, body, err := send(ctx, client, baseURL, req)
	if err != nil {
		return nil, fmt.Errorf("verification: %w", err)
	}
	if err := exp.orDefault().Check(status, contentType, body); err != nil {
		return body, fmt.Errorf("%w; body: %s", err, truncate(body, 512))
	}
	return body, nil
}

// send sends req once to the server at baseURL and returns the response's
// status, Content-Type and body (at most 1 MiB).
func send(ctx context.Context, client *http.Client, baseURL string, req request) (int, string, []byte, error) {
	hreq, err := http.NewRequestWithContext(ctx, req.Method, baseURL+req.Path, strings.NewReader(req.Body))
	if err != nil {
		return 0, "", nil, fmt.Errorf("build request: %w", err)
	}
	for _, h := range req.Headers {
		hreq.Header.Set(h.Name, h.Value)
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return 0, "", nil, fmt.Errorf("send request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, "", nil, fmt.Errorf("read response: %w", err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body, nil
}

// checkToolsCallResponse validates one HTTP response to the benchmark
// request; see verify.
func checkToolsCallResponse(status int, contentType string, body []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("HTTP status %d, want 200", status)
	}
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" {
		return fmt.Errorf("Content-Type %q, want application/json", contentType)
	}
	var resp toolsCallResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("decode JSON-RPC response: %w", err)
	}
	switch {
	case resp.JSONRPC != "2.0":
		return fmt.Errorf("jsonrpc %q, want \"2.0\"", resp.JSONRPC)
	case !bytes.Equal(bytes.TrimSpace(resp.ID), []byte("1")):
		return fmt.Errorf("id %s, want 1", resp.ID)
	case len(resp.Error) > 0 && !bytes.Equal(resp.Error, []byte("null")):
		return fmt.Errorf("JSON-RPC error %s", resp.Error)
	case resp.Result == nil:
		return fmt.Errorf("no result")
	case resp.Result.IsError:
		return fmt.Errorf("tool result has isError: true")
	case resp.Result.ResultType != "" && resp.Result.ResultType != "complete":
		return fmt.Errorf("resultType %q, want \"complete\" (or absent)", resp.Result.ResultType)
	case len(resp.Result.Content) != 1:
		return fmt.Errorf("%d content blocks, want 1", len(resp.Result.Content))
	case resp.Result.Content[0].Type != "text" || resp.Result.Content[0].Text != expectedText:
		return fmt.Errorf("content %+v, want one text block %q", resp.Result.Content[0], expectedText)
	}
	return nil
}

// truncate shortens b to at most n bytes for error messages.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

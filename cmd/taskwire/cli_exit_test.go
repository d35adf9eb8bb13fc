package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/client"
)

// TestExitCodes maps every error a client command can end with to its
// documented exit code, also when the error is wrapped.
func TestExitCodes(t *testing.T) {
	rpc := &client.RPCError{Code: -32602, Message: "Invalid params", Method: "tools/call"}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"help", flag.ErrHelp, 0},
		{"tool error", errToolError, 1},
		{"JSON-RPC error", rpc, 1},
		{"task not found", fmt.Errorf("%w: %w", client.ErrTaskNotFound, rpc), 1},
		{"protocol error", &client.ProtocolError{Method: "tools/call", Reason: "malformed"}, 1},
		{"HTTP error", &client.HTTPError{StatusCode: 429, Method: "tools/call"}, 1},
		{"usage", usageErrorf("bad"), 2},
		{"unauthorized", &client.AuthError{StatusCode: 401}, 3},
		{"forbidden", &client.AuthError{StatusCode: 403}, 3},
		{"unreachable", &client.ConnectionError{Op: "POST", Err: &url.Error{Op: "Post", URL: "http://x", Err: errors.New("refused")}}, 4},
		{"unreachable, wrapped", fmt.Errorf("call: %w", &client.ConnectionError{Op: "POST", Err: context.Canceled}), 4},
		{"task failed", &client.TaskFailedError{TaskID: "t", Err: rpc}, 5},
		{"task cancelled", &client.TaskCancelledError{TaskID: "t"}, 6},
		{"input required", &client.InputRequiredError{TaskID: "t", Keys: []string{"k"}}, 7},
		{"timeout", &exitError{code: exitTimeout}, 124},
		{"interrupted", &exitError{code: exitInterrupted}, 130},
		{"any other error", errors.New("disk full"), 1},
	}
	for _, tc := range tests {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exit code %d, want %d", tc.name, got, tc.want)
		}
		// A session's fail keeps the code and gives the message.
		s := &clientSession{url: defaultURL}
		if tc.err != nil && !errors.Is(tc.err, flag.ErrHelp) {
			if got := exitCode(s.fail(tc.err)); got != tc.want {
				t.Errorf("%s: after fail, exit code %d, want %d", tc.name, got, tc.want)
			}
		}
	}
	// Every code is in the help text.
	for _, code := range []string{"0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 ", "124 ", "130 "} {
		if !strings.Contains(exitCodes, "\n  "+code) {
			t.Errorf("exit code %s is not documented in the help text", code)
		}
	}
}

func TestDescribeNamesNoToken(t *testing.T) {
	msg := describe(&client.AuthError{StatusCode: 401}, defaultURL)
	if !strings.Contains(msg, "--token") || !strings.Contains(msg, tokenEnv) {
		t.Errorf("401 message %q does not say how to authenticate", msg)
	}
	msg = describe(&client.ConnectionError{Op: "POST", Err: errors.New("connection refused")}, "http://127.0.0.1:1/mcp")
	if !strings.Contains(msg, "cannot reach http://127.0.0.1:1/mcp") {
		t.Errorf("unreachable message %q", msg)
	}
}

// TestPrintedCommandsQuoteTaskIDs: a task ID comes from the server; the
// commands printed for the user to copy must not run what a hostile ID
// holds.
func TestPrintedCommandsQuoteTaskIDs(t *testing.T) {
	s := &clientSession{url: "http://127.0.0.1:9/mcp?a=b c"}
	for _, tc := range []struct{ id, want string }{
		{"01a2-ff", "taskwire task wait --url 'http://127.0.0.1:9/mcp?a=b c' 01a2-ff"},
		{"x; rm -rf ~", "taskwire task wait --url 'http://127.0.0.1:9/mcp?a=b c' 'x; rm -rf ~'"},
		{"it's\n$(boom)", `taskwire task wait --url 'http://127.0.0.1:9/mcp?a=b c' 'it'\''s $(boom)'`},
	} {
		if got := s.resumeCommand(tc.id); got != tc.want {
			t.Errorf("resumeCommand(%q) = %s, want %s", tc.id, got, tc.want)
		}
	}
	hint := answerHint(s, &client.InputRequiredError{TaskID: "x;y", Keys: []string{"k;z"}})
	if !strings.Contains(hint, "taskwire task answer --url 'http://127.0.0.1:9/mcp?a=b c' 'x;y' 'k;z={}'") {
		t.Errorf("answer hint:\n%s", hint)
	}
}

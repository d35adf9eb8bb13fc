package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/node/nodecmd"
)

// Exit codes of the client commands (tools, call, task). Every other
// command exits 0 on success, exitUsage on a usage error and 1 on any
// other failure.
const (
	exitOK            = 0
	exitToolError     = 1 // the tool's result has isError true; also any other failure
	exitUsage         = 2
	exitAuth          = 3
	exitUnreachable   = 4
	exitTaskFailed    = 5
	exitTaskCancelled = 6
	exitInputRequired = 7
	exitTimeout       = 124
	exitInterrupted   = 130 // Ctrl-C; a task being waited for runs on
)

// exitCodes is the table `taskwire help` prints.
const exitCodes = `Exit codes of tools, call and task:
  0    success
  1    the tool reported an error (isError: true), or the server refused the
       request (a JSON-RPC error; a task that is unknown, expired or another
       caller's is "not found")
  2    usage: unknown command, flag, tool or input; a required input left
       out; a value that does not parse or is refused
  3    authentication required or refused (HTTP 401 or 403)
  4    the server cannot be reached, or has no MCP endpoint at the URL (HTTP
       404: is the path right?)
  5    the task failed
  6    the task was cancelled
  7    the task needs input and the command is not interactive: it prints the
       "taskwire task answer" command to give it
  124  --timeout passed before the task finished (the task runs on)
  130  interrupted (Ctrl-C); a task being waited for is detached and runs on
`

// usageError is a mistake on the command line: exit code 2, and runMain
// prints where the usage is.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError carries an exit code chosen by a command. An empty message
// prints nothing more (the command printed what there was to say).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// errToolError: the tool's result has isError true (printed already).
var errToolError = &exitError{code: exitToolError, msg: "the tool reported an error (isError: true)"}

// exitCode maps a command's error to its exit code.
func exitCode(err error) int {
	var (
		ee        *exitError
		ue        *usageError
		auth      *client.AuthError
		conn      *client.ConnectionError
		failed    *client.TaskFailedError
		cancelled *client.TaskCancelledError
		input     *client.InputRequiredError
	)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), nodecmd.ExitCode(err) == exitUsage:
		return exitUsage
	case errors.As(err, &auth):
		return exitAuth
	case errors.As(err, &input):
		return exitInputRequired
	case errors.As(err, &failed):
		return exitTaskFailed
	case errors.As(err, &cancelled):
		return exitTaskCancelled
	case errors.As(err, &conn), noEndpoint(err) != nil:
		return exitUnreachable
	}
	return exitToolError
}

// noEndpoint returns the error saying that no MCP endpoint answers at the
// URL (HTTP 404 to the first request, as for a wrong path), or nil.
func noEndpoint(err error) *client.HTTPError {
	var he *client.HTTPError
	if errors.As(err, &he) && he.NoEndpoint() {
		return he
	}
	return nil
}

// describe is the message printed for a client command's error: the
// client's error with a hint where one helps. It never includes a token:
// url must be the printed form (redactedURL), and the URL inside the error
// is redacted too.
func describe(err error, url string) string {
	var (
		auth   *client.AuthError
		conn   *client.ConnectionError
		failed *client.TaskFailedError
	)
	switch {
	case errors.As(err, &auth) && auth.StatusCode == 403:
		return "the server refused the credentials (HTTP 403): " + url
	case errors.As(err, &auth):
		return "the server requires authentication (HTTP 401): pass --token or set TASKWIRE_TOKEN"
	case errors.As(err, &conn):
		return fmt.Sprintf("cannot reach %s: %s (is `taskwire serve` running? --url or TASKWIRE_URL names the server)", url, printable(conn.Err))
	case noEndpoint(err) != nil:
		return fmt.Sprintf("no MCP endpoint at %s (HTTP %d); is the path right? taskwire serve listens at /mcp", url, noEndpoint(err).StatusCode)
	case errors.As(err, &failed):
		msg := fmt.Sprintf("the task failed: %s (JSON-RPC error %d)", failed.Err.Message, failed.Err.Code)
		if failed.StatusMessage != "" {
			msg += ": " + failed.StatusMessage
		}
		return msg
	case errors.Is(err, client.ErrTaskCancelled):
		return "the task was cancelled"
	case errors.Is(err, client.ErrTaskNotFound):
		return "task not found: it is unknown, expired, or another caller's"
	}
	return printable(err)
}

// printable is err's message with the URL of a *url.Error in it redacted
// (net/http hides only a password; a query may carry a token).
func printable(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redactedURL(ue.URL) // the command owns the error and ends with it
	}
	return err.Error()
}

// redactedURL is raw fit to print: userinfo and the values of query
// parameters whose names suggest a credential (token, key, secret,
// password, signature, code, session) are replaced by "xxxxx". A URL with
// nothing to hide is returned unchanged.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	changed := false
	if u.User != nil {
		u.User, changed = url.User("xxxxx"), true
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			k, _, hasValue := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); hasValue && (err != nil || sensitiveParam(name)) {
				params[i], changed = k+"=xxxxx", true
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	if !changed {
		return raw
	}
	return u.String()
}

// sensitiveParam reports whether a query parameter's name suggests that
// its value is a credential.
func sensitiveParam(name string) bool {
	name = strings.ToLower(name)
	for _, s := range []string{"token", "key", "secret", "pass", "pwd", "auth", "credential", "sig", "code", "session"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

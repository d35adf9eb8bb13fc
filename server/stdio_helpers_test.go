package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/server"
)

// stdioMsg is one JSON-RPC message the server wrote, with its raw line.
type stdioMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	line string
}

// stdioRig runs ServeStdio over pipes: the test writes the client's
// lines and reads every line the server writes.
type stdioRig struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string // every line of the server's output, in order
	done  chan error  // ServeStdio's result
}

// waitLimit bounds how long a test waits for something that should
// happen; it only turns a hang into a failure.
const waitLimit = 10 * time.Second

func newStdioRig(t *testing.T, srv *server.Server, opts server.StdioOptions) *stdioRig {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rig := &stdioRig{t: t, in: inW, lines: make(chan string, 1024), done: make(chan error, 1)}
	go func() {
		err := srv.ServeStdio(context.Background(), inR, outW, opts)
		outW.Close()
		rig.done <- err
	}()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(rig.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			rig.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-rig.done:
		case <-time.After(waitLimit):
			t.Error("ServeStdio did not return after EOF")
		}
		outR.Close()
		<-readDone
	})
	return rig
}

// send writes one line to the server's input.
func (r *stdioRig) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write to stdin: %v", err)
	}
}

// recv returns the next message the server writes; every line must be
// one JSON-RPC message.
func (r *stdioRig) recv() stdioMsg {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatal("the server's output ended")
		}
		return parseStdioLine(r.t, line)
	case <-time.After(waitLimit):
		r.t.Fatal("no message from the server")
	}
	return stdioMsg{}
}

func parseStdioLine(t *testing.T, line string) stdioMsg {
	t.Helper()
	var m stdioMsg
	if err := json.Unmarshal([]byte(line), &m); err != nil || !strings.Contains(line, `"jsonrpc":"2.0"`) {
		t.Fatalf("stdout line is not a JSON-RPC message: %q", line)
	}
	m.line = line
	return m
}

// call sends a request and returns the response with its id, failing on
// any other message in between.
func (r *stdioRig) call(id, method, params string) stdioMsg {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	m := r.recv()
	if string(m.ID) != id || m.Method != "" {
		r.t.Fatalf("got %s, want the response to %s", m.line, id)
	}
	return m
}

// modernParams adds the modern _meta to params members (without braces).
func modernParams(members string) string {
	if members == "" {
		return `{"_meta":` + metaJSON + `}`
	}
	return `{"_meta":` + metaJSON + `,` + members + `}`
}

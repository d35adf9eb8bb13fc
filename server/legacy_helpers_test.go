package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// legacyMsg is one JSON-RPC message a legacy client reads.
type legacyMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *mcp.Error      `json:"error"`
}

// legacyReply is a legacy POST's response: status, headers and every
// message (one for JSON, each event for SSE).
type legacyReply struct {
	status int
	header http.Header
	body   []byte
	msgs   []legacyMsg
}

// final returns the last message (the response).
func (r *legacyReply) final(t *testing.T) legacyMsg {
	t.Helper()
	if len(r.msgs) == 0 {
		t.Fatalf("no messages in response (status %d, body %q)", r.status, r.body)
	}
	return r.msgs[len(r.msgs)-1]
}

// legacyClient speaks the 2025 transport over real HTTP.
type legacyClient struct {
	t       *testing.T
	url     string
	sid     string
	version string // MCP-Protocol-Version header; "" sends none
	auth    string // Authorization header; "" sends none
	// answer, if set, answers server-to-client requests read from a POST's
	// stream: it returns the result JSON, or "" to send nothing.
	answer func(m legacyMsg) string
}

// newLegacyRig serves srv over loopback HTTP and returns a client.
func newLegacyRig(t *testing.T, srv http.Handler) *legacyClient {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &legacyClient{t: t, url: hs.URL + "/mcp"}
}

func (c *legacyClient) clone() *legacyClient {
	d := *c
	return &d
}

// newPost builds a legacy POST of body with the client's headers.
func (c *legacyClient) newPost(ctx context.Context, body string) *http.Request {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		r.Header.Set("Mcp-Session-Id", c.sid)
	}
	if c.version != "" {
		r.Header.Set("MCP-Protocol-Version", c.version)
	}
	if c.auth != "" {
		r.Header.Set("Authorization", c.auth)
	}
	return r
}

// send posts body and reads the whole response, answering
// server-to-client requests on an SSE stream with c.answer.
func (c *legacyClient) send(body string) *legacyReply {
	c.t.Helper()
	return c.do(c.newPost(context.Background(), body))
}

func (c *legacyClient) do(r *http.Request) *legacyReply {
	c.t.Helper()
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	out := &legacyReply{status: res.StatusCode, header: res.Header}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		out.body, _ = io.ReadAll(res.Body)
		if len(bytes.TrimSpace(out.body)) > 0 {
			var m legacyMsg
			if err := json.Unmarshal(out.body, &m); err != nil {
				c.t.Fatalf("decode %q: %v", out.body, err)
			}
			out.msgs = append(out.msgs, m)
		}
		return out
	}
	br := bufio.NewReader(res.Body)
	for {
		data, err := readSSEData(br)
		if err != nil {
			return out
		}
		out.body = append(append(out.body, data...), '\n')
		var m legacyMsg
		if err := json.Unmarshal(data, &m); err != nil {
			c.t.Fatalf("decode event %q: %v", data, err)
		}
		out.msgs = append(out.msgs, m)
		if m.Method != "" && len(m.ID) > 0 && c.answer != nil {
			if result := c.answer(m); result != "" {
				ack := c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`)
				if ack.status != http.StatusAccepted {
					c.t.Errorf("answer to %s: status %d, body %s", m.Method, ack.status, ack.body)
				}
			}
		}
		if m.Method == "" {
			return out
		}
	}
}

// readSSEData returns the data of the next SSE event, skipping comments.
func readSSEData(br *bufio.Reader) ([]byte, error) {
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data != nil {
				return data, nil
			}
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[len("data: "):]...)
		}
	}
}

// initialize opens a session with the given version and capabilities JSON.
func (c *legacyClient) initialize(version, caps string) *legacyReply {
	c.t.Helper()
	rep := c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"legacy-test","version":"1"}}}`)
	if rep.status == http.StatusOK {
		c.sid = rep.header.Get("Mcp-Session-Id")
	}
	return rep
}

// mustInitialize opens a session and sends notifications/initialized.
func (c *legacyClient) mustInitialize(version, caps string) {
	c.t.Helper()
	if rep := c.initialize(version, caps); rep.status != http.StatusOK || c.sid == "" {
		c.t.Fatalf("initialize: status %d, body %s", rep.status, rep.body)
	}
	if rep := c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); rep.status != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: status %d", rep.status)
	}
}

// request sends a request with id 1 and params JSON ("" for none).
func (c *legacyClient) request(method, params string) *legacyReply {
	c.t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	return c.send(body + "}")
}

// legacyServer builds the catalog server with 2025 sessions on and the
// development admission (Bearer names are identities).
func newLegacyCatalog(t testing.TB, mutate func(*server.Options, *server.Endpoint)) *server.Server {
	t.Helper()
	return newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) {
		o.Admission = server.DevAdmission()
		o.NodeID = "n1"
		if mutate != nil {
			mutate(o, ep)
		}
	})
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}

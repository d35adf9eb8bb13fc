package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// FuzzLegacyEnvelope sends arbitrary bodies and Mcp-Session-Id values as
// 2025-era POSTs (no modern header) to an endpoint that serves both eras,
// next to a live session. Invariants: no 5xx but 503 and 504; a 202 has no
// body and needs the live session; a result needs the live session unless
// it answers initialize (which then mints a fresh ID); every session-not-
// found answer is the same bytes; every message is JSON.
//
//	go test -run '^$' -fuzz FuzzLegacyEnvelope -fuzztime 20s ./server
func FuzzLegacyEnvelope(f *testing.F) {
	srv := newLegacyCatalog(f, func(o *server.Options, _ *server.Endpoint) {
		o.RequestTimeout = 2 * time.Second
	})
	post := func(body, sid, version string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header["Mcp-Session-Id"] = []string{sid}
		}
		if version != "" {
			r.Header["Mcp-Protocol-Version"] = []string{version}
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		return rec
	}
	init := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`, "", "")
	live := init.Header().Get("Mcp-Session-Id")
	if init.Code != 200 || live == "" {
		f.Fatalf("initialize: %d %s", init.Code, init.Body)
	}
	notFound := post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "unknown", "").Body.String()
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"bzE6MQ"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm","arguments":{"target":"db"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///readme.md"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"tasks":{"list":{}}},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":"tw.n1.00000000000000000000000000000000","result":{}}`,
		`{"jsonrpc":"2.0","id":"tw.zz.00000000000000000000000000000000","error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{},"error":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{}`, `[]`, `null`, ``, `{"jsonrpc":"2.0","id":`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), true, "", "")
		f.Add([]byte(s), false, "AAAA", "2025-03-26")
		f.Add([]byte(s), false, strings.Repeat("x", 300), "")
	}
	f.Fuzz(func(t *testing.T, body []byte, useLive bool, sid, version string) {
		if useLive {
			sid = live
		}
		rec := post(string(body), sid, version)
		if rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("HTTP %d without Cache-Control: no-store", rec.Code)
		}
		if rec.Code >= 500 && rec.Code != 503 && rec.Code != 504 {
			t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
		}
		valid := sid == live && !strings.ContainsAny(sid, " \t")
		modernHeader := mcp.IsModernVersion(strings.Trim(version, " \t"))
		if rec.Code == http.StatusAccepted {
			if rec.Body.Len() != 0 || !valid && !modernHeader {
				t.Fatalf("202 (session %v) with body %q", valid, rec.Body)
			}
			return
		}
		out := rec.Body.Bytes()
		if rec.Code == http.StatusNotFound && bytes.Contains(out, []byte("-32001")) && rec.Body.String() != notFound {
			t.Fatalf("session-not-found bytes differ: %q vs %q", out, notFound)
		}
		var msgs [][]byte
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			for _, line := range bytes.Split(out, []byte("\n")) {
				if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					msgs = append(msgs, d)
				}
			}
		} else if len(bytes.TrimSpace(out)) > 0 {
			msgs = append(msgs, out)
		}
		for _, m := range msgs {
			if !json.Valid(m) {
				t.Fatalf("message is not JSON: %q", m)
			}
		}
		if len(msgs) == 0 {
			return // a canceled call, or a body the modern pipeline dropped
		}
		var final struct {
			Result json.RawMessage `json:"result"`
		}
		json.Unmarshal(msgs[len(msgs)-1], &final)
		isInit := bytes.Contains(body, []byte(`"initialize"`))
		isModern := modernHeader || bytes.Contains(body, []byte("io.modelcontextprotocol/protocolVersion"))
		if final.Result != nil && !valid && !isInit && !isModern {
			t.Fatalf("a result without the live session: %s", out)
		}
		if got := rec.Header().Get("Mcp-Session-Id"); got != "" && (got == live || !slices.Contains([]int{200}, rec.Code)) {
			t.Fatalf("session ID %q minted with HTTP %d", got, rec.Code)
		}
	})
}

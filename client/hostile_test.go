package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// hostile serves a well-behaved server/discover and tools/list, and
// answers tools/call with misbehave.
func hostile(t *testing.T, misbehave func(w http.ResponseWriter, id json.RawMessage)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case mcp.MethodServerDiscover:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		case mcp.MethodToolsList:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		default:
			misbehave(w, req.ID)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHostileServers(t *testing.T) {
	const limit = 64 << 10
	sse := func(w http.ResponseWriter) http.Flusher {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		f.Flush()
		return f
	}
	for name, tc := range map[string]struct {
		misbehave func(w http.ResponseWriter, id json.RawMessage)
		check     func(err error) bool
	}{
		"huge JSON body": {
			misbehave: func(w http.ResponseWriter, id json.RawMessage) {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
				chunk := strings.Repeat("x", 8<<10)
				for i := 0; i < 1024; i++ { // 8 MiB, far over the limit
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
			},
			check: func(err error) bool { return errors.Is(err, client.ErrResponseTooLarge) },
		},
		"malformed JSON": {
			misbehave: func(w http.ResponseWriter, _ json.RawMessage) { io.WriteString(w, `{"jsonrpc":"2.0","id":`) },
			check:     isProtocolError,
		},
		"wrong response id": {
			misbehave: func(w http.ResponseWriter, _ json.RawMessage) {
				io.WriteString(w, `{"jsonrpc":"2.0","id":"someone-else","result":{"content":[]}}`)
			},
			check: isProtocolError,
		},
		"task result without taskId": {
			misbehave: func(w http.ResponseWriter, id json.RawMessage) {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"task","status":"working"}}`, id)
			},
			check: isProtocolError,
		},
		"endless keep-alives": {
			misbehave: func(w http.ResponseWriter, _ json.RawMessage) {
				f := sse(w)
				for {
					if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
						return
					}
					f.Flush()
				}
			},
			check: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		},
		"endless notifications": {
			misbehave: func(w http.ResponseWriter, _ json.RawMessage) {
				f := sse(w)
				for {
					if _, err := io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"); err != nil {
						return
					}
					f.Flush()
				}
			},
			check: func(err error) bool { return errors.Is(err, client.ErrResponseTooLarge) },
		},
		"oversized event": {
			misbehave: func(w http.ResponseWriter, _ json.RawMessage) {
				f := sse(w)
				io.WriteString(w, "data: ")
				chunk := strings.Repeat("y", 8<<10)
				for i := 0; i < 1024; i++ {
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
				f.Flush()
			},
			check: func(err error) bool { return errors.Is(err, client.ErrResponseTooLarge) },
		},
		"stream ends early": {
			misbehave: func(w http.ResponseWriter, _ json.RawMessage) { sse(w) },
			check: func(err error) bool {
				var ce *client.ConnectionError
				return errors.As(err, &ce)
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			url := hostile(t, tc.misbehave)
			c := newClient(t, url, client.Options{MaxResultBytes: limit, MaxNotificationBytes: 1 << 10, MaxStreamEvents: 100})
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Call(ctx, "tool", nil)
			if err == nil || !tc.check(err) {
				t.Fatalf("err = %v (%T)", err, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("returned after %v, past the deadline", d)
			}
		})
	}
}

func isProtocolError(err error) bool {
	var pe *client.ProtocolError
	return errors.As(err, &pe)
}

func TestAuthAndConnectionErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://example.test/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, client.Options{Token: func(context.Context) (string, error) { return "bad", nil }})
	err := c.Connect(testContext(t))
	var ae *client.AuthError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.WWWAuthenticate, "resource_metadata") {
		t.Fatalf("err = %v", err)
	}
	c2 := newClient(t, srv.URL, client.Options{Token: func(context.Context) (string, error) { return "good", nil }})
	if err := c2.Connect(testContext(t)); !errors.As(err, &ae) || ae.StatusCode != 403 {
		t.Fatalf("err = %v", err)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	c3 := newClient(t, url, client.Options{})
	var ce *client.ConnectionError
	if err := c3.Connect(testContext(t)); !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
}

func TestInvalidToolIsNotCalled(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case mcp.MethodServerDiscover:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		case mcp.MethodToolsList:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ok","inputSchema":{"type":"object"}},{"name":"bad","inputSchema":{"type":"object","properties":{"v":{"type":"number","x-mcp-header":"V"}}}}],"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		default:
			calls.Add(1)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, req.ID)
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, client.Options{})
	ctx := testContext(t)
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != 1 || tools[0].Name != "ok" {
		t.Fatalf("tools %v %v", tools, err)
	}
	if _, err := c.Call(ctx, "bad", nil); err == nil || calls.Load() != 0 {
		t.Fatalf("calling the invalid tool: %v, %d requests", err, calls.Load())
	}
	if _, err := c.Call(ctx, "ok", nil); err != nil || calls.Load() != 1 {
		t.Fatalf("calling the valid tool: %v, %d requests", err, calls.Load())
	}
}

// A listen stream that never acknowledges must not hold Wait: after
// RequestTimeout the client polls.
func TestListenWithoutAcknowledgementFallsBackToPolling(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
		switch req.Method {
		case mcp.MethodServerDiscover:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		case mcp.MethodSubscriptionsListen:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // silent until the client gives up
		case mcp.MethodTasksGet:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","taskId":"t-1","status":"completed","createdAt":"x","lastUpdatedAt":"x","ttlMs":null,"result":{"content":[],"structuredContent":{"ok":true}}}}`, req.ID)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, client.Options{RequestTimeout: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := c.Task("t-1").Wait(ctx)
	if err != nil || string(out.StructuredContent) != `{"ok":true}` {
		t.Fatalf("%v %+v", err, out)
	}
}

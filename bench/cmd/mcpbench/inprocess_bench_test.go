package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/conformance/fixture"
)

// BenchmarkServeTasksGet measures one tasks/get of a completed task served
// in process (ServeHTTP with a recorder), for the taskwire fixture and the
// bare handler: the per-request cost without the network and wrk.
func BenchmarkServeTasksGet(b *testing.B) {
	fx, err := fixture.New(fixture.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fx.Close()
	ts := httptest.NewServer(fx)
	id, err := createCompletedTask(context.Background(), ts.Client(), ts.URL)
	ts.Close()
	if err != nil {
		b.Fatal(err)
	}
	bare, _ := newBareHandler()
	req := tasksGetRequest(id)
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"taskwire", fx}, {"bare", bare}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(req.Method, "http://127.0.0.1:8080"+req.Path, strings.NewReader(req.Body))
				for _, h := range req.Headers {
					r.Header.Set(h.Name, h.Value)
				}
				w := httptest.NewRecorder()
				tc.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// BenchmarkServeToolsCall is BenchmarkServeTasksGet for the tools-call
// scenario's request, for reference.
func BenchmarkServeToolsCall(b *testing.B) {
	fx, err := fixture.New(fixture.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fx.Close()
	bare, _ := newBareHandler()
	req := toolsCallRequest()
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"taskwire", fx}, {"bare", bare}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(req.Method, "http://127.0.0.1:8080"+req.Path, strings.NewReader(req.Body))
				for _, h := range req.Headers {
					r.Header.Set(h.Name, h.Value)
				}
				w := httptest.NewRecorder()
				tc.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// BenchmarkServeLegacyToolsCall measures, in process, the legacy-tools-call
// scenario's requests: the 2025-11-25 call inside a session (taskwire's
// legacy path and go-sdk's stateful server) and the modern call (taskwire
// and bare), each request with its own id as under load.
func BenchmarkServeLegacyToolsCall(b *testing.B) {
	fx, err := fixture.New(fixture.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fx.Close()
	stateful, _ := newGoSDKStatefulHandler()
	bare, _ := newBareHandler()
	session := func(h http.Handler) request {
		ts := httptest.NewServer(h)
		defer ts.Close()
		id, err := openLegacySession(context.Background(), ts.Client(), ts.URL)
		if err != nil {
			b.Fatal(err)
		}
		return legacySessionToolsCallRequest(id)
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
		req  request
	}{
		{"taskwire-legacy", fx, session(fx)},
		{"taskwire", fx, toolsCallRequest()},
		{"gosdk-stateful", stateful, session(stateful)},
		{"bare", bare, toolsCallRequest()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			prefix, suffix, _ := strings.Cut(tc.req.Body, idMember)
			n := 0
			for b.Loop() {
				n++
				body := prefix + `"id":` + strconv.Itoa(n) + "," + suffix
				r := httptest.NewRequest(tc.req.Method, "http://127.0.0.1:8080"+tc.req.Path, strings.NewReader(body))
				for _, h := range tc.req.Headers {
					r.Header.Set(h.Name, h.Value)
				}
				w := httptest.NewRecorder()
				tc.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

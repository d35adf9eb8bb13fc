package main

import (
	"context"
	"net/http"
	"net/http/httptest"
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

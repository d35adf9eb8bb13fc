package prometheus_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"

	twprom "github.com/taskwire/taskwire/prometheus"
	"github.com/taskwire/taskwire/server"
)

// BenchmarkToolsCallMetrics compares an inline 2026-07-28 tools/call of
// an echo tool without metrics and with the Prometheus ServerMetrics (and
// its in-flight Observer), over loopback HTTP with parallel clients and
// in process (ServeHTTP with a recorder). -count interleaves the two:
//
//	go test -run '^$' -bench ToolsCallMetrics -benchtime 3s -count 5 ./prometheus
func BenchmarkToolsCallMetrics(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	header := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {"echo"},
	}
	for _, variant := range []string{"none", "prometheus"} {
		// newServer returns a server for one run of a benchmark, and the
		// registry of its metrics.
		newServer := func(b *testing.B) (*server.Server, *prom.Registry) {
			reg := twprom.NewRegistry()
			if variant == "none" {
				return newEchoServerWith(b, server.Options{}), reg
			}
			m, err := twprom.NewServerMetrics(reg)
			if err != nil {
				b.Fatal(err)
			}
			return newEchoServerWith(b, server.Options{Metrics: m, Observer: m.Observer()}), reg
		}
		b.Run("http/"+variant, func(b *testing.B) {
			srv, _ := newServer(b)
			hs := httptest.NewServer(srv)
			defer hs.Close()
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", bytes.NewReader(body))
					req.Header = header.Clone()
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						b.Errorf("status %d", res.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
		b.Run("inprocess/"+variant, func(b *testing.B) {
			srv, reg := newServer(b)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
				r.Header = header.Clone()
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.StopTimer()
			if variant == "prometheus" {
				if got, _ := scrape(b, twprom.Handler(reg)).Value("taskwire_server_tool_calls_total", "tool", "echo"); got < float64(b.N) {
					b.Fatalf("%v tool calls counted, want at least %d", got, b.N)
				}
			}
		})
	}
}

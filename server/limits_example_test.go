package server_test

import (
	"log"
	"net"
	"net/http"
	"time"

	"github.com/taskwire/taskwire/server"
)

// An http.Server for a node exposed to a network: at most 1,000
// connections open at once, headers within 10 s, bodies within
// Options.BodyReadTimeout, idle keep-alive connections closed after 30 s.
// ReadTimeout stays unset, since it would also cut off streamed responses.
func ExampleLimitListener() {
	srv, err := server.New(server.Options{
		Endpoints:       []*server.Endpoint{server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "example", Version: "1.0.0"})},
		BodyReadTimeout: 10 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	log.Fatal(hs.Serve(server.LimitListener(ln, 1000)))
}

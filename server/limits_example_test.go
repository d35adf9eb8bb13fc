package server_test

import (
	"log"
	"net"
	"net/http"
	"time"

	"github.com/taskwire/taskwire/server"
)

// An http.Server for a node exposed to a network: at most 1,000
// connections open at once and 125 (the default, an eighth) from one client
// address, idle keep-alive connections closed to make room at the cap
// (the ConnState hook) and after 30 s in any case, headers within 10 s,
// bodies within Options.BodyReadTimeout. ReadTimeout stays unset, since it
// would also cut off streamed responses.
func ExampleNewConnLimiter() {
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
	limited, err := server.NewConnLimiter(ln, server.ConnLimits{Max: 1000})
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{
		Handler:           srv,
		ConnState:         limited.ConnState,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	log.Fatal(hs.Serve(limited))
}

package admin_test

import (
	"context"
	"log"

	"github.com/taskwire/taskwire/admin"
	twprom "github.com/taskwire/taskwire/prometheus"
)

// ExampleNew serves the metrics of a registry of the application's own and
// a readiness check on a loopback admin listener.
func ExampleNew() {
	reg := twprom.NewRegistry()
	h, err := admin.New(admin.Options{
		Metrics: twprom.Handler(reg),
		// A store's Ready method fits here: st.Ready.
		Ready: func(ctx context.Context) error { return nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := admin.Listen("127.0.0.1:0", h, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	// Point Prometheus at http://<srv.Addr()>/metrics.
}

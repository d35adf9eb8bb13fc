package console_test

import (
	"context"
	"log"
	"net/http"

	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/store/sqlite"
)

// ExampleNew serves the console of a SQLite store under /console on a mux
// of an operations listener.
func ExampleNew() {
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: sqlite.MemoryPath})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	c, err := console.New(console.Options{
		Store:  st.Operator(),
		Gauges: st,
		Events: st.EventPublisher(),
		Token:  []byte("an operator token of 16 bytes or more"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	mux := http.NewServeMux()
	mux.Handle(console.Prefix+"/", c)
	_ = mux // serve it on the operations listener only, never beside the MCP endpoints
	// Output:
}

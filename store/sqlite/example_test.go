package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/store/sqlite"
)

// ExampleStore_Sessions is the snippet of docs/production.md ("Sessions of
// 2025-era clients"): one file holds tasks and sessions, and a periodic
// sweep reclaims ended sessions in bounded batches.
func ExampleStore_Sessions() {
	dir, err := os.MkdirTemp("", "taskwire-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "taskwire.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	var sessions session.Store = st.Sessions() // hand this to the server

	// What a periodic sweep does: at most 1,000 ended sessions per call.
	n, err := sessions.Sweep(ctx, time.Now(), 1000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("swept", n)
	// Output: swept 0
}

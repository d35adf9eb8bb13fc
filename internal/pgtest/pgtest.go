// Package pgtest gives tests the PostgreSQL server they run against and
// schemas of their own in it.
//
// The server is TASKWIRE_TEST_POSTGRES_URL, by default
// postgres://postgres@127.0.0.1:5432/test. A test that needs it and finds
// no server answering is skipped, except under CI=true, where it fails: CI
// must not pass by running none of the PostgreSQL tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the server of the tests when TASKWIRE_TEST_POSTGRES_URL
// is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test"

// URL returns the tests' server after checking that it answers within
// 5 s; otherwise it skips t, or fails it under CI=true. Messages show the
// URL without its password.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TASKWIRE_TEST_POSTGRES_URL")
	if u == "" {
		u = DefaultURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err == nil {
		err = conn.Ping(ctx)
		conn.Close(context.Background())
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s (TASKWIRE_TEST_POSTGRES_URL) is required under CI=true: %v", Redacted(u), err)
		}
		t.Skipf("PostgreSQL at %s unreachable (set TASKWIRE_TEST_POSTGRES_URL): %v", Redacted(u), err)
	}
	return u
}

// Schema returns a fresh schema name that starts with prefix, and drops
// the schema, with everything in it, when t ends. It creates nothing: the
// store under test does, when it migrates. Call it before starting what
// uses the schema, so that cleanups stop those users before the drop.
func Schema(t testing.TB, pgURL, prefix string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := prefix + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}

// Redacted returns a connection URL without its password.
func Redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

package sessiondata

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/taskwire/taskwire/session"
)

func TestCheck(t *testing.T) {
	good := session.Record{Key: strings.Repeat("ab", 32), Endpoint: "mcp", Tenant: "t", Principal: "p",
		ProtocolVersion: "2025-11-25", IdleTimeout: time.Minute}
	for name, tc := range map[string]struct {
		mutate func(r *session.Record)
		ok     bool
	}{
		"good":            {func(*session.Record) {}, true},
		"upper-case key":  {func(r *session.Record) { r.Key = strings.ToUpper(r.Key) }, false},
		"short key":       {func(r *session.Record) { r.Key = r.Key[1:] }, false},
		"NUL in tenant":   {func(r *session.Record) { r.Tenant = "a\x00b" }, false},
		"bad UTF-8":       {func(r *session.Record) { r.Principal = "\xff" }, false},
		"long endpoint":   {func(r *session.Record) { r.Endpoint = strings.Repeat("e", MaxText+1) }, false},
		"huge info":       {func(r *session.Record) { r.ClientInfo = make([]byte, MaxJSON+1) }, false},
		"negative idle":   {func(r *session.Record) { r.IdleTimeout = -1 }, false},
		"max-size fields": {func(r *session.Record) { r.ClientCapabilities = make([]byte, MaxJSON) }, true},
	} {
		r := good
		tc.mutate(&r)
		err := Check(&r)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: Check = %v, want ok %v", name, err, tc.ok)
		}
	}
}

func TestEndsAndLimits(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	if got := EndsMs(t0.Add(time.Hour), t0, time.Minute); got != t0.Add(time.Minute).UnixMilli() {
		t.Errorf("idle first: %d", got)
	}
	if got := EndsMs(t0.Add(time.Second), t0, time.Minute); got != t0.Add(time.Second).UnixMilli() {
		t.Errorf("absolute first: %d", got)
	}
	for in, want := range map[int]int{-1: 0, 0: 0, 5: 5, MaxSweep + 1: MaxSweep} {
		if got := SweepLimit(in); got != want {
			t.Errorf("SweepLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

// TestValuesScan writes a record's Values to a real SQLite table of the
// session columns and reads it back with Scan.
func TestValuesScan(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const columns = `key, endpoint, tenant, principal, protocol_version, client_capabilities, client_info, log_level,
		created_at, last_used_at, expires_at, idle_timeout_ms`
	if _, err := db.Exec(`CREATE TABLE sessions (` + columns + `, ends_at)`); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1_800_000_000_000).UTC()
	r := session.Record{Key: strings.Repeat("ab", 32), Endpoint: "mcp", Tenant: "t", Principal: "p",
		ProtocolVersion: "2025-11-25", ClientInfo: []byte(`{"name":"c"}`), LogLevel: "info", CreatedAt: at,
		LastUsedAt: at.Add(time.Second), ExpiresAt: at.Add(time.Hour), IdleTimeout: time.Minute}
	if _, err := db.Exec(`INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, Values(&r)...); err != nil {
		t.Fatal(err)
	}
	var capsNull bool
	var ends int64
	if err := db.QueryRow(`SELECT client_capabilities IS NULL, ends_at FROM sessions`).Scan(&capsNull, &ends); err != nil ||
		!capsNull || ends != EndsMs(r.ExpiresAt, r.LastUsedAt, r.IdleTimeout) {
		t.Fatalf("stored: capabilities NULL %v, ends_at %d, %v", capsNull, ends, err)
	}
	got, err := Scan(db.QueryRow(`SELECT ` + columns + ` FROM sessions`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("Scan(Values) (-want +got):\n%s", diff)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt in %v, want UTC", got.CreatedAt.Location())
	}
	if _, err := Scan(db.QueryRow(`SELECT key FROM sessions`)); err == nil {
		t.Error("Scan of a short row succeeded")
	}
}

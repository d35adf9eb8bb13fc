package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskwire/taskwire/admin"
)

// TestReady checks Ready on a store that can serve and on each way it
// cannot, with the reason /readyz would show: the reason never carries the
// driver's message (which names the host and user).
func TestReady(t *testing.T) {
	t.Parallel()
	s, p := proxied(t, Options{Timeout: time.Second})
	ctx := context.Background()
	check := func(want string) {
		t.Helper()
		err := s.Ready(ctx)
		switch {
		case want == "" && err != nil:
			t.Fatalf("Ready: %v", err)
		case want != "" && err == nil:
			t.Fatalf("Ready succeeded; want %q", want)
		case want != "" && admin.Reason(err) != want:
			t.Errorf("reason %q (error %v), want %q", admin.Reason(err), err, want)
		}
	}
	check("")

	p.Freeze()
	start := time.Now()
	check("store timed out")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Ready took %v with the database frozen, want about the 1 s timeout", took)
	}
	p.Unfreeze()
	check("")

	exec := func(sql string) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO ` + s.q.ident + `.schema_version (version, name, applied_at) SELECT max(version) + 1, 'future', now() FROM ` + s.q.ident + `.schema_version`)
	check("schema too new")
	exec(`DELETE FROM ` + s.q.ident + `.schema_version WHERE version >= (SELECT max(version) - 1 FROM ` + s.q.ident + `.schema_version)`)
	check("schema outdated")
	if err := s.Ready(ctx); !errors.Is(err, ErrSchemaOutdated) {
		t.Errorf("Ready = %v, want ErrSchemaOutdated", err)
	}
}

// TestReadyUnreachable checks that a store whose server went away is not
// ready, with a reason that names no host.
func TestReadyUnreachable(t *testing.T) {
	t.Parallel()
	s, p := proxied(t, Options{Timeout: time.Second})
	p.Close()
	err := s.Ready(context.Background())
	if err == nil {
		t.Fatal("Ready succeeded with the proxy closed")
	}
	if got := admin.Reason(err); got != "store unreachable" && got != "store timed out" {
		t.Errorf("reason %q (error %v), want store unreachable", got, err)
	}
}

package sessiondata

import (
	"errors"
	"strings"
	"testing"
	"time"

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

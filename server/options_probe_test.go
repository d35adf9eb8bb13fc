package server_test

import (
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/server"
)

// TestNewTokenBucketRefuses: options that would make the bucket refuse
// every request (or overflow its waits) fail at construction, naming the
// field; NewTokenBucket never panics.
func TestNewTokenBucketRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  server.TokenBucketOptions
		field string // "" means accepted
	}{
		{"defaults", server.TokenBucketOptions{Rate: 1}, ""},
		{"fractional rate, default burst", server.TokenBucketOptions{Rate: 0.5}, ""},
		{"burst of one", server.TokenBucketOptions{Rate: 0.5, Burst: 1}, ""},
		{"zero rate", server.TokenBucketOptions{}, "Rate"},
		{"negative rate", server.TokenBucketOptions{Rate: -1}, "Rate"},
		{"NaN rate", server.TokenBucketOptions{Rate: math.NaN()}, "Rate"},
		{"infinite rate", server.TokenBucketOptions{Rate: math.Inf(1)}, "Rate"},
		{"burst below one token", server.TokenBucketOptions{Rate: 0.5, Burst: 0.5}, "Burst"},
		{"negative burst", server.TokenBucketOptions{Rate: 1, Burst: -2}, "Burst"},
		{"infinite burst", server.TokenBucketOptions{Rate: 1, Burst: math.Inf(1)}, "Burst"},
		{"negative MaxKeys", server.TokenBucketOptions{Rate: 1, MaxKeys: -1}, "MaxKeys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := server.NewTokenBucket(tc.opts)
			if tc.field == "" {
				if err != nil || tb == nil {
					t.Fatalf("NewTokenBucket(%+v) = %v, %v, want a limiter", tc.opts, tb, err)
				}
				if ok, _ := tb.Allow("k"); !ok {
					t.Errorf("a fresh bucket refused its first request")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "TokenBucketOptions."+tc.field) {
				t.Fatalf("NewTokenBucket(%+v) error = %v, want one naming %s", tc.opts, err, tc.field)
			}
		})
	}
}

// TestTokenBucketTinyRateWait: a rate so low that its wait does not fit a
// time.Duration reports a long positive wait, not an overflowed one.
func TestTokenBucketTinyRateWait(t *testing.T) {
	clock := time.Unix(0, 0)
	tb := newBucket(t, server.TokenBucketOptions{Rate: 1e-300, Burst: 1, Now: func() time.Time { return clock }})
	if ok, _ := tb.Allow("k"); !ok {
		t.Fatal("the first request was refused")
	}
	ok, wait := tb.Allow("k")
	if ok || wait < 24*time.Hour {
		t.Errorf("Allow = %v, %v; want a refusal with a long positive wait", ok, wait)
	}
}

// TestLimitListenerRefuses: a cap below one is an error, not a panic.
func TestLimitListenerRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got []string
	for _, n := range []int{0, -1} {
		if _, err := server.LimitListener(ln, n); err != nil {
			got = append(got, "refused")
		} else {
			got = append(got, "accepted")
		}
	}
	if diff := cmp.Diff([]string{"refused", "refused"}, got); diff != "" {
		t.Errorf("LimitListener (-want +got):\n%s", diff)
	}
}

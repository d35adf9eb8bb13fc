package console

import (
	"testing"
	"time"
)

// TestSignInLimiterForgets checks that the limiter keeps at most max
// addresses, forgetting the least recently used.
func TestSignInLimiterForgets(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newSignInLimiter(SignInLimit{Burst: 1, Every: time.Hour}, SignInLimit{Burst: 100, Every: time.Second}, 2, now)
	for _, a := range []string{"a", "b"} {
		if w := l.fail(a, now); w != 0 {
			t.Fatalf("first failure of %s limited: %v", a, w)
		}
	}
	if l.blocked("a", now) == 0 || l.blocked("b", now) == 0 {
		t.Fatal("a and b are not blocked after their one failure")
	}
	l.fail("c", now) // evicts a, the least recently used
	if got := len(l.addrs); got != 2 || l.recent.Len() != 2 {
		t.Fatalf("%d addresses kept (%d in the list), want 2", got, l.recent.Len())
	}
	if l.blocked("a", now) != 0 {
		t.Error("a is still remembered")
	}
	if l.blocked("b", now) == 0 || l.blocked("c", now) == 0 {
		t.Error("b or c is forgotten")
	}
}

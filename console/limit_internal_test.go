package console

import (
	"strconv"
	"testing"
	"time"
)

// TestSignInLimiterForgets checks that the limiter keeps at most max
// addresses, forgetting the least recently used.
func TestSignInLimiterForgets(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	hour := SignInLimit{Burst: 1, Every: time.Hour}
	l := newSignInLimiter(hour, hour, SignInLimit{Burst: 100, Every: time.Second}, 2, now)
	for i, a := range []string{"a", "b"} {
		if w := l.fail(a, uint8(i), now); w != 0 {
			t.Fatalf("first failure of %s limited: %v", a, w)
		}
	}
	if l.blocked("a", 0, now) == 0 || l.blocked("b", 1, now) == 0 {
		t.Fatal("a and b are not blocked after their one failure")
	}
	l.fail("c", 2, now) // evicts a, the least recently used
	if got := len(l.addrs); got != 2 || l.recent.Len() != 2 {
		t.Fatalf("%d addresses kept (%d in the list), want 2", got, l.recent.Len())
	}
	if l.blocked("a", 0, now) != 0 {
		t.Error("a is still remembered")
	}
	if l.blocked("b", 1, now) == 0 || l.blocked("c", 2, now) == 0 {
		t.Error("b or c is forgotten")
	}
}

// TestSignInGuessesBounded checks the bound the credential classes keep
// on guessing: however many distinct wrong tokens one address sends at
// once, at most its own burst and every class's burst of them are
// checked, and the right token stays checkable unless wrong ones of its
// own class used that class's bucket.
func TestSignInGuessesBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	k := deriveKeys([]byte("the-operator-token-0123456789"))
	perAddr := SignInLimit{Burst: DefaultSignInBurst, Every: DefaultSignInEvery}
	perClass := SignInLimit{Burst: DefaultCredentialSignInBurst, Every: DefaultCredentialSignInEvery}
	l := newSignInLimiter(perAddr, perClass, SignInLimit{Burst: 1 << 30, Every: time.Nanosecond}, 16, now)
	right := k.signInClass("the-operator-token-0123456789")
	checked, rightBlockedAt := 0, -1
	for i := range 100_000 {
		cls := k.signInClass("guess-" + strconv.Itoa(i))
		if l.blocked("attacker", cls, now) == 0 {
			checked++
			l.fail("attacker", cls, now)
		}
		if rightBlockedAt < 0 && l.blocked("attacker", right, now) > 0 {
			rightBlockedAt = i
		}
	}
	if limit := perAddr.Burst + credentialClasses*perClass.Burst; checked > limit {
		t.Errorf("%d guesses checked at once, want at most %d", checked, limit)
	}
	// Ten wrong tokens from the address (an operator's typos, or another
	// user of a shared proxy) leave the right token checkable.
	if rightBlockedAt >= 0 && rightBlockedAt < perAddr.Burst+perClass.Burst {
		t.Errorf("the right token was refused unchecked after %d wrong ones", rightBlockedAt+1)
	}
	// The classes refill: after Every, one more guess per class.
	later := now.Add(perClass.Every)
	more := 0
	for i := range 10_000 {
		cls := k.signInClass("later-" + strconv.Itoa(i))
		if l.blocked("attacker", cls, later) == 0 {
			more++
			l.fail("attacker", cls, later)
		}
	}
	if limit := credentialClasses + perAddr.Burst; more > limit {
		t.Errorf("%d guesses checked after %v, want at most %d", more, perClass.Every, limit)
	}
}

// TestSignOutsBounded checks that the signed-out sessions remembered stay
// at most maxSignOuts, that making room never makes a signed-out session
// valid again (the oldest are refused by their expiry instead), and that a
// later session that was not signed out stays valid.
func TestSignOutsBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := newSignOuts()
	nonce := func(i int) []byte {
		b := make([]byte, nonceLen)
		copy(b, strconv.Itoa(i))
		return b
	}
	expiry := func(i int) time.Time { return now.Add(time.Hour + time.Duration(i)*time.Second) }
	const n = maxSignOuts + 100
	for i := range n {
		s.add(nonce(i), expiry(i), now)
	}
	if got := len(s.byID); got > maxSignOuts {
		t.Errorf("%d sign-outs remembered, want at most %d", got, maxSignOuts)
	}
	for i := range n {
		if !s.revoked(nonce(i), expiry(i)) {
			t.Fatalf("signed-out session %d is valid again", i)
		}
	}
	if s.revoked(nonce(n), expiry(n)) {
		t.Error("a later session that was not signed out is refused")
	}
	// Expired entries go first, before any valid one is forgotten.
	later := expiry(n)
	s.add(nonce(n+1), later.Add(time.Hour), later)
	if got := len(s.byID); got != 1 {
		t.Errorf("%d sign-outs after all others expired, want 1", got)
	}
}

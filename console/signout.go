package console

import (
	"sync"
	"time"
)

// maxSignOuts bounds the signed-out sessions a console remembers.
const maxSignOuts = 4096

// signOuts are the sessions signed out before their cookie expired, which
// the console refuses although their cookies still verify. Each is kept
// only until its cookie would have expired anyway, and at most
// maxSignOuts of them: to make room, the one that expires first is
// forgotten and every cookie that expires no later than it is refused
// from then on (a few older sessions end early, none comes back). It is
// safe for concurrent use.
type signOuts struct {
	mu     sync.Mutex
	byID   map[[nonceLen]byte]time.Time // the cookie's expiry, by session nonce
	before time.Time                    // cookies expiring at or before it are refused; zero: none
}

func newSignOuts() *signOuts { return &signOuts{byID: make(map[[nonceLen]byte]time.Time)} }

// add records the sign-out at now of the session with nonce, whose cookie
// expires at expires.
func (s *signOuts) add(nonce []byte, expires, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= maxSignOuts {
		for id, exp := range s.byID {
			if !now.Before(exp) {
				delete(s.byID, id) // expired: its cookie is refused anyway
			}
		}
	}
	if len(s.byID) >= maxSignOuts {
		var first [nonceLen]byte
		var firstExp time.Time
		for id, exp := range s.byID {
			if firstExp.IsZero() || exp.Before(firstExp) {
				first, firstExp = id, exp
			}
		}
		delete(s.byID, first)
		if firstExp.After(s.before) {
			s.before = firstExp
		}
	}
	s.byID[[nonceLen]byte(nonce)] = expires
}

// revoked reports whether the session with nonce, whose cookie expires at
// expires, was signed out.
func (s *signOuts) revoked(nonce []byte, expires time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.before.IsZero() && !expires.After(s.before) {
		return true
	}
	_, ok := s.byID[[nonceLen]byte(nonce)]
	return ok
}

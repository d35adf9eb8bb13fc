package testissuer

import (
	"sync"
	"testing"
)

// hold makes JWKS requests wait until released.
type hold struct {
	arrived  chan struct{}
	released chan struct{}
	once     sync.Once
}

// HoldJWKS makes JWKS requests hang until release is called; each held
// request sends on arrived first, if there is room. The hold is released
// when the test ends, before the server stops.
func (iss *Issuer) HoldJWKS(t testing.TB) (arrived <-chan struct{}, release func()) {
	h := &hold{arrived: make(chan struct{}, 16), released: make(chan struct{})}
	release = func() { h.once.Do(func() { close(h.released) }) }
	t.Cleanup(release)
	iss.hold.Store(h)
	return h.arrived, release
}

// waitHold waits for the hold's release, if there is a hold.
func (iss *Issuer) waitHold() {
	h := iss.hold.Load()
	if h == nil {
		return
	}
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	<-h.released
}

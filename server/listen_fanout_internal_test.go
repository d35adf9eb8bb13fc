package server

import (
	"testing"
	"time"
)

// TestFlightCache: a view's flight is shared until the next hint for its
// task, which forgets it before queuing the hint; a failed flight is
// forgotten; the last unwatch forgets the task's flights; flights of
// tasks nobody follows are not kept.
func TestFlightCache(t *testing.T) {
	r := newRegistry(10, 10)
	s1, s2 := newTestSubscription("a"), newTestSubscription("a")
	for _, s := range []*subscription{s1, s2} {
		s.accept(map[string]bool{"t1": true})
	}
	r.watch(s1, []string{"t1"})
	r.watch(s2, []string{"t1"})

	f, start := r.flightFor("t1", "v", time.Minute)
	if !start {
		t.Fatal("the first flight was not new")
	}
	if g, start := r.flightFor("t1", "v", time.Minute); g != f || start {
		t.Error("a second listen of the view did not join the flight")
	}
	if g, start := r.flightFor("t1", "w", time.Minute); g == f || !start {
		t.Error("another view joined the flight")
	}
	r.hint("t1")
	if g, start := r.flightFor("t1", "v", time.Minute); g == f || !start {
		t.Error("a flight that started before the hint was shared after it")
	} else {
		f = g
	}
	r.forget("t1", "v", f)
	if g, _ := r.flightFor("t1", "v", time.Minute); g == f {
		t.Error("a forgotten flight was shared")
	}

	r.unwatch(s1, "t1")
	if len(r.flights["t1"]) == 0 {
		t.Error("flights forgotten while the task is still followed")
	}
	r.unwatch(s2, "t1")
	if len(r.flights) != 0 {
		t.Errorf("flights of an unfollowed task kept: %v", r.flights)
	}
	if _, start := r.flightFor("t9", "v", time.Minute); !start || len(r.flights) != 0 {
		t.Errorf("a flight of a task nobody follows was cached: %v", r.flights)
	}
	r.close()
	if f, _ := r.flightFor("t1", "v", time.Minute); f != nil {
		t.Error("a closed registry starts flights")
	}
}

// TestViewOfIsUnambiguous checks that identities whose fields run into
// each other differently get different views: a NUL or any other byte an
// admission controller puts into an identity cannot make two callers share
// a rendered notification.
func TestViewOfIsUnambiguous(t *testing.T) {
	ep := NewEndpoint(EndpointOptions{Path: "/mcp", Name: "v", Version: "1.0.0"})
	view := func(id Identity) string {
		return viewOf(&call{ep: ep, id: id, params: &rawParams{}})
	}
	pairs := [][2]Identity{
		{{Principal: "a\x00b", Tenant: "c"}, {Principal: "a", Tenant: "b\x00c"}},
		{{Principal: "ab", Tenant: ""}, {Principal: "a", Tenant: "b"}},
		{{Tenant: "t", RateKey: ""}, {Tenant: "", RateKey: "t"}},
	}
	for _, p := range pairs {
		if view(p[0]) == view(p[1]) {
			t.Errorf("identities %+v and %+v share a view", p[0], p[1])
		}
	}
	if view(Identity{Principal: "p", Tenant: "t"}) != view(Identity{Principal: "p", Tenant: "t"}) {
		t.Error("one identity has two views")
	}
}

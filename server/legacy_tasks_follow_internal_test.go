package server

import (
	"fmt"
	"testing"
)

// Task-status followers end with their session on this node and one
// principal cannot take every follower slot of the node.
func TestStatusFollowersBoundedAndEndWithSession(t *testing.T) {
	var s legacyTaskState
	for _, tc := range []struct {
		name           string
		session, owner string
		want           bool
	}{
		{"first of alice", "s0", "alice", true},
		{"alice's share, across sessions", "", "alice", true},
		{"past alice's share", "s-extra", "alice", false},
		{"bob still follows", "b0", "bob", true},
	} {
		if tc.session == "" { // fill alice's share in sessions of up to 32
			for i := 1; i < maxStatusFollowsPerOwner; i++ {
				if _, ok := s.acquire(fmt.Sprintf("s%d", i/maxStatusFollowsPerSession+1), tc.owner); !ok {
					t.Fatalf("%s: follower %d refused", tc.name, i)
				}
			}
			continue
		}
		if _, ok := s.acquire(tc.session, tc.owner); ok != tc.want {
			t.Errorf("%s: acquired %v, want %v", tc.name, ok, tc.want)
		}
	}
	ctx, ok := s.acquire("b0", "bob")
	if !ok {
		t.Fatal("bob's second follower refused")
	}
	s.endSession("b0")
	select {
	case <-ctx.Done():
	default:
		t.Fatal("a follower outlived the end of its session")
	}
	s.release(ctx, "b0", "bob")
	if ctx2, ok := s.acquire("b1", "bob"); !ok || ctx2.Err() != nil {
		t.Fatalf("a follower of another session of bob: ok %v, err %v", ok, ctx2.Err())
	}
}

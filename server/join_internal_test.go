package server

import (
	"context"
	"errors"
	"testing"
)

// TestJoinGroup: wait returns at once when nothing runs, counts by kind
// what still runs when its context ends, and close cancels the running
// goroutines that gave a cancel function and refuses later starts;
// cancel alone does not refuse them.
func TestJoinGroup(t *testing.T) {
	var g joinGroup
	if err := g.wait(context.Background()); err != nil {
		t.Fatalf("wait on an empty group: %v", err)
	}
	canceled := 0
	doneA, _ := g.start("a", func() { canceled++ })
	doneB1, _ := g.start("b", nil)
	doneB2, _ := g.start("b", nil)
	g.cancel()
	if _, ok := g.start("c", nil); !ok {
		t.Fatal("cancel refused a start")
	}
	// c never ends: it is not waited for below, only counted.
	ctx, stop := context.WithCancel(context.Background())
	stop()
	err := g.wait(ctx)
	if !errors.Is(err, ErrStillRunning) || err.Error() != "goroutines still running: 1 a, 2 b, 1 c" {
		t.Errorf("wait = %v", err)
	}
	g.close()
	if canceled != 2 {
		t.Errorf("cancel functions ran %d times, want 2 (cancel, then close)", canceled)
	}
	if _, ok := g.start("d", nil); ok {
		t.Error("a closed group accepted a start")
	}
	doneA()
	doneB1()
	doneB2()
	err = g.wait(ctx)
	if err == nil || err.Error() != "goroutines still running: 1 c" {
		t.Errorf("wait = %v, want only c", err)
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestProgressLine(t *testing.T) {
	ptr := func(x float64) *float64 { return &x }
	steps := []struct {
		after time.Duration
		state progressState
		tick  bool
	}{
		{0, progressState{Status: "working"}, false},
		{400 * time.Millisecond, progressState{Status: "working", Message: "row 200 of 1000"}, false},
		{600 * time.Millisecond, progressState{Status: "working", Message: "row 200 of 1000"}, false}, // no change
		{time.Second, progressState{}, true},                                                          // a tick only
		{250 * time.Millisecond, progressState{Status: "working", Message: "halfway", Progress: ptr(500), Total: ptr(1000)}, false},
		{time.Second, progressState{Status: "working", Message: "halfway"}, false}, // keeps the numbers
		{time.Second, progressState{Status: "completed"}, false},
	}
	run := func(terminal bool) string {
		clock := &fakeClock{t: time.Unix(1000, 0)}
		var b strings.Builder
		pl := newProgressLine(&b, terminal, clock.now)
		for _, s := range steps {
			clock.advance(s.after)
			if s.tick {
				pl.tick()
				continue
			}
			pl.update(s.state)
		}
		pl.end()
		return b.String()
	}
	t.Run("not a terminal: one line per change", func(t *testing.T) {
		want := "working (0s)\n" +
			"working: row 200 of 1000 (400ms)\n" +
			"working: halfway [500/1000 50%] (2.3s)\n" +
			"completed (4.3s)\n"
		if diff := cmp.Diff(want, run(false)); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
	})
	t.Run("terminal: redrawn in place", func(t *testing.T) {
		const cr = "\r\x1b[K"
		want := cr + "working (0s)" +
			cr + "working: row 200 of 1000 (400ms)" +
			cr + "working: row 200 of 1000 (1s)" +
			cr + "working: row 200 of 1000 (2s)" +
			cr + "working: halfway [500/1000 50%] (2.3s)" +
			cr + "working: halfway [500/1000 50%] (3.3s)" +
			cr + "completed (4.3s)\n"
		if diff := cmp.Diff(want, run(true)); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
	})
}

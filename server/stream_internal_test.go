package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// deadlineRecorder records the write deadlines a stream sets.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (w *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	w.deadlines = append(w.deadlines, t)
	return nil
}

// TestStreamWriteDeadline: a stream with a write timeout gives every write
// at least the timeout, but sets the deadline again only once less than
// the timeout remains (about once per eighth of it), not on every write.
func TestStreamWriteDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
		st := newResponseStream(w, time.Hour)
		st.writeTimeout = 8 * time.Second
		st.ownKeepAlive = true
		start := time.Now()
		var want []time.Time
		write := func(at time.Duration, sets bool) {
			t.Helper()
			time.Sleep(start.Add(at).Sub(time.Now()))
			if err := st.notifyTask(`{"taskId":"t"}`); err != nil {
				t.Fatal(err)
			}
			if sets {
				want = append(want, start.Add(at+9*time.Second))
			}
		}
		write(0, true)                       // first write: now + 9 s
		write(100*time.Millisecond, false)   // 8.9 s left
		write(time.Second, false)            // exactly 8 s left
		write(1500*time.Millisecond, true)   // 7.5 s left: renewed
		if err := st.comment(); err != nil { // keep-alives share the deadline
			t.Fatal(err)
		}
		write(2*time.Second, false)
		if diff := cmp.Diff(want, w.deadlines); diff != "" {
			t.Errorf("deadlines (-want +got):\n%s", diff)
		}
		if w.Code != http.StatusOK {
			t.Errorf("status %d", w.Code)
		}
	})
}

package storerules

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

func TestMergeHistory(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	ev := func(kind backend.TaskEventKind, attempt int64) backend.TaskEvent {
		return backend.TaskEvent{At: t0.Add(time.Duration(attempt) * time.Second), Kind: kind, Attempt: attempt}
	}
	claim := func(attempt int64) *backend.TaskEvent { e := ev(backend.EventClaimed, attempt); return &e }
	done := ev(backend.EventCompleted, 2)
	tests := []struct {
		name string
		h    History
		want []backend.TaskEvent
	}{{
		name: "created only",
		h:    History{Created: t0},
		want: []backend.TaskEvent{{At: t0, Kind: backend.EventCreated}},
	}, {
		name: "the common life: no rows",
		h:    History{Created: t0, Claim: claim(1), Completed: &backend.TaskEvent{At: t0, Kind: backend.EventCompleted, Attempt: 1}},
		want: []backend.TaskEvent{{At: t0, Kind: backend.EventCreated}, *claim(1),
			{At: t0, Kind: backend.EventCompleted, Attempt: 1}},
	}, {
		name: "a claim recorded after its retry goes before it",
		h: History{Created: t0, Claim: claim(2), Completed: &done,
			Rows: []backend.TaskEvent{ev(backend.EventRetry, 1), ev(backend.EventClaimed, 1), ev(backend.EventProgress, 2)}},
		want: []backend.TaskEvent{{At: t0, Kind: backend.EventCreated}, ev(backend.EventClaimed, 1), ev(backend.EventRetry, 1),
			*claim(2), ev(backend.EventProgress, 2), done},
	}, {
		name: "a cancellation asked before any claim stays before it",
		h: History{Created: t0, Claim: claim(1),
			Rows: []backend.TaskEvent{ev(backend.EventCancelRequested, 0), ev(backend.EventCancelled, 1)}},
		want: []backend.TaskEvent{{At: t0, Kind: backend.EventCreated}, ev(backend.EventCancelRequested, 0), *claim(1),
			ev(backend.EventCancelled, 1)},
	}, {
		name: "rows of an earlier version: nothing added twice",
		h: History{Created: t0, Claim: claim(1), Completed: &done,
			Rows: []backend.TaskEvent{ev(backend.EventCreated, 0), ev(backend.EventClaimed, 1), ev(backend.EventCompleted, 1)}},
		want: []backend.TaskEvent{ev(backend.EventCreated, 0), ev(backend.EventClaimed, 1), ev(backend.EventCompleted, 1)},
	}, {
		name: "an older version's retried step at attempt 0 stays last",
		h: History{Created: t0, Claim: claim(1),
			Rows: []backend.TaskEvent{ev(backend.EventFailed, 1), ev(backend.EventRetried, 0)}},
		want: []backend.TaskEvent{{At: t0, Kind: backend.EventCreated}, *claim(1), ev(backend.EventFailed, 1),
			ev(backend.EventRetried, 0)},
	}, {
		name: "claims out of order are sorted",
		h: History{Created: t0, Claim: claim(3),
			Rows: []backend.TaskEvent{ev(backend.EventClaimed, 2), ev(backend.EventClaimed, 1), ev(backend.EventReleased, 2)}},
		want: []backend.TaskEvent{{At: t0, Kind: backend.EventCreated}, ev(backend.EventClaimed, 1), ev(backend.EventClaimed, 2),
			ev(backend.EventReleased, 2), *claim(3)},
	}}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, MergeHistory(tt.h)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestMergeHistoryBound: the newest backend.MaxTaskEvents steps are kept,
// derived ones included.
func TestMergeHistoryBound(t *testing.T) {
	var rows []backend.TaskEvent
	for i := range backend.MaxTaskEvents {
		rows = append(rows, backend.TaskEvent{Kind: backend.EventProgress, Attempt: 1, Message: fmt.Sprint(i)})
	}
	got := MergeHistory(History{Rows: rows, Claim: &backend.TaskEvent{Kind: backend.EventClaimed, Attempt: 1}})
	if len(got) != backend.MaxTaskEvents || got[0].Message != "0" || got[len(got)-1].Message != fmt.Sprint(backend.MaxTaskEvents-1) {
		t.Errorf("%d steps, %q .. %q", len(got), got[0].Message, got[len(got)-1].Message)
	}
}

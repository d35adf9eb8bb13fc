package console

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/taskwire/taskwire/task"
)

// Live updates. One subscription to Options.Events serves every stream:
// its callback, which must not block, marks the streams that want the hint
// (all of them, or those of one task) through a channel of one slot, so
// that any number of hints between two sends merge into one. A stream
// sends at most one "change" event per Coalesce interval, a comment every
// Heartbeat, and ends after StreamLifetime, when its session expires, when
// the client goes away, when another stream of the same session starts
// (one per browser session), or at Close. At most MaxStreams run at once;
// more are refused with 503. Each stream runs in its request's goroutine:
// the console starts none of its own.

type streams struct {
	opts  Options
	unsub func()

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by close
	all    map[*stream]struct{}
	bySess map[string]*stream
}

type stream struct {
	want   string        // task ID, or "" for every hint
	notify chan struct{} // one slot: a hint is pending
	stop   chan struct{} // closed when replaced by a newer stream of the session
}

func newStreams(opts Options) *streams {
	s := &streams{opts: opts, done: make(chan struct{}), all: map[*stream]struct{}{}, bySess: map[string]*stream{}}
	if opts.Events != nil {
		s.unsub = opts.Events.Subscribe(s.hint)
	}
	return s
}

// hint is the subscription's callback.
func (s *streams) hint(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.all {
		if st.want == "" || st.want == id {
			select {
			case st.notify <- struct{}{}:
			default: // one is pending already: coalesced
			}
		}
	}
}

// add registers a stream for the session key ("" for bearer requests),
// replacing that session's earlier one. It returns nil when closed or
// full.
func (s *streams) add(key, want string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if old := s.bySess[key]; key != "" && old != nil {
		close(old.stop)
		delete(s.all, old)
		delete(s.bySess, key)
	}
	if len(s.all) >= s.opts.MaxStreams {
		return nil
	}
	st := &stream{want: want, notify: make(chan struct{}, 1), stop: make(chan struct{})}
	s.all[st] = struct{}{}
	if key != "" {
		s.bySess[key] = st
	}
	return st
}

// remove unregisters st unless a newer stream replaced it already.
func (s *streams) remove(key string, st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.all, st)
	if s.bySess[key] == st {
		delete(s.bySess, key)
	}
}

func (s *streams) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.done)
	if s.unsub != nil {
		s.unsub()
	}
}

// serveEvents is GET /console/events[?task=ID]: a text/event-stream of
// "change" events.
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request, op operator) {
	if c.opts.Events == nil {
		http.Error(w, "Live updates are off", http.StatusNotFound)
		return
	}
	want := r.URL.Query().Get("task")
	if want != "" && task.ValidID(want) != nil {
		http.Error(w, "Bad task ID", http.StatusBadRequest)
		return
	}
	key := ""
	if op.nonce != nil {
		key = string(op.nonce)
	}
	st := c.streams.add(key, want)
	if st == nil {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "Too many live-update streams", http.StatusServiceUnavailable)
		return
	}
	defer c.streams.remove(key, st)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(msg string) bool {
		// The admin listener's write timeout would cut a long stream:
		// each write gets a deadline of its own.
		rc.SetWriteDeadline(time.Now().Add(c.opts.Heartbeat + 10*time.Second))
		if _, err := fmt.Fprint(w, msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	retry := strconv.FormatInt(max(c.opts.Heartbeat.Milliseconds(), 1000), 10)
	if !send("retry: " + retry + "\n: connected\n\n") {
		return
	}
	heartbeat := time.NewTicker(c.opts.Heartbeat)
	defer heartbeat.Stop()
	lifetime := time.NewTimer(c.opts.StreamLifetime)
	defer lifetime.Stop()
	hold := time.NewTimer(0) // fires when the coalescing interval ends
	defer hold.Stop()
	<-hold.C
	holding, pending := false, false
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.streams.done:
			return
		case <-st.stop:
			return
		case <-lifetime.C:
			return
		case <-heartbeat.C:
			if _, v, _ := c.authenticate(r); v != authOK { // the session or token expired
				return
			}
			if !send(": heartbeat\n\n") {
				return
			}
		case <-st.notify:
			if holding {
				pending = true
				continue
			}
			if !send("event: change\ndata: 1\n\n") {
				return
			}
			holding = true
			hold.Reset(c.opts.Coalesce)
		case <-hold.C:
			holding = false
			if pending {
				pending = false
				if !send("event: change\ndata: 1\n\n") {
					return
				}
				holding = true
				hold.Reset(c.opts.Coalesce)
			}
		}
	}
}

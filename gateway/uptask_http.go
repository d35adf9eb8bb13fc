package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// httpTasks is the taskCaller of an HTTP upstream: a client of its own
// that declares tasks (the 2026-07-28 extension, the 2025-11-25 tasks
// capability), beside the pass-through client that declares none, so that
// the upstream answers pass-through calls inline. Its clients keep their
// 2025-era sessions on Close (client.Options.KeepSession): a server binds
// 2025-11-25 tasks to their session, which a gateway started later
// resumes (client.Options.ResumeSession) to follow them.
type httpTasks struct {
	c    *client.Client
	url  string
	opts client.Options // of c: the base of a resumed session's client

	maxResumed int // Options.MaxResumedSessions

	mu      sync.Mutex
	closed  bool
	seq     uint64
	resumed map[string]*resumedSession // by session ID
	// open are the unsettled tasks this process created, by session ID
	// and task ID; pinned the sessions with too many to track, kept open;
	// recent the tasks settled last in the session of c, told to the
	// process that resumes it (uptask_sessions.go).
	open   map[string]map[string]struct{}
	pinned map[string]bool
	recent recentSettled
}

// resumedSession is the client of a resumed session and its use.
type resumedSession struct {
	c     *client.Client
	users int
	used  uint64 // httpTasks.seq at the last release: the eldest idle goes first
	// settled are the tasks of the session known to need no run again
	// (uptask_sessions.go); pinned when too many to track.
	settled map[string]struct{}
	pinned  bool
	dirty   bool // a task settled since the last check whether to end it
}

// httpTask is an upstream task of an httpTasks client and its session.
type httpTask struct {
	*client.Task
	session, version string
}

func (t *httpTask) Session() (string, string) { return t.session, t.version }

// newTaskCaller returns the taskCaller of an HTTP upstream with task
// tools, nil otherwise (a stdio upstream is its own, uptask_stdio.go).
func newTaskCaller(opts Options) (taskCaller, error) {
	if opts.Upstream == "" || !opts.hasTaskTools() {
		return nil, nil
	}
	co := client.Options{
		Transport:        opts.Transport,
		Header:           opts.UpstreamHeaders.Clone(),
		RequestTimeout:   max(opts.TaskCallTimeout, opts.ListTimeout),
		ProtocolVersions: opts.ProtocolVersions,
		ClientInfo:       mcp.Implementation{Name: "taskwire-gateway"},
		MinPollInterval:  minTaskPoll,
		MaxPollInterval:  maxTaskPoll,
		// Input an upstream asks for during a run (inline, not of its
		// tasks) is relayed as the task's input round (relay.go).
		Handlers:    relayHandlers(),
		Logger:      opts.Logger,
		KeepSession: true,
	}
	c, err := client.New(opts.Upstream, co)
	if err != nil {
		return nil, fmt.Errorf("upstream task client: %w", err)
	}
	return &httpTasks{c: c, url: opts.Upstream, opts: co, maxResumed: opts.MaxResumedSessions, resumed: map[string]*resumedSession{},
		open: map[string]map[string]struct{}{}, pinned: map[string]bool{}}, nil
}

func (h *httpTasks) callTask(ctx context.Context, name string, args json.RawMessage, progress func(client.Progress)) (*mcp.CallToolResult, upstreamTask, error) {
	// PreferTask asks a 2025-11-25 upstream for a task where the tool's
	// execution.taskSupport allows one; a 2026-07-28 upstream decides.
	res, err := h.c.Call(ctx, name, args, client.PreferTask(), client.WithProgress(progress))
	switch {
	case err != nil:
		return nil, nil, err
	case res.Task != nil:
		// The session that created the task: the current one (a renewal
		// during the call sent it again in the new session).
		sid, version := h.c.Session()
		h.mu.Lock()
		h.createdLocked(sid, res.Task.ID())
		h.mu.Unlock()
		return nil, &httpTask{Task: res.Task, session: sid, version: version}, nil
	case res.Result == nil:
		return nil, nil, &client.ProtocolError{Method: mcp.MethodToolsCall, Reason: "an empty answer"}
	}
	return res.Result, nil, nil
}

func (h *httpTasks) task(st upstreamTaskState) (upstreamTask, func(), error) {
	own := func() (upstreamTask, func(), error) {
		sid, version := h.c.Session()
		return &httpTask{Task: h.c.Task(st.Task), session: sid, version: version}, func() {}, nil
	}
	if st.Session == "" {
		return own() // a 2026-07-28 task: no session
	}
	if sid, _ := h.c.Session(); sid == st.Session {
		return own()
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return own() // fails ErrClosed: the run is retried
	}
	r := h.resumed[st.Session]
	var evicted *client.Client
	if r == nil {
		if len(h.resumed) >= h.maxResumed {
			if evicted = h.evictIdleLocked(); evicted == nil {
				h.mu.Unlock()
				return nil, nil, errResumedBusy
			}
		}
		o := h.opts
		o.ProtocolVersions = []string{st.Version}
		o.ResumeSession = &client.SessionResume{ID: st.Session, ProtocolVersion: st.Version}
		c, err := client.New(h.url, o)
		if err != nil {
			h.mu.Unlock()
			closeEvicted(evicted)
			// The checkpoint's session is malformed; its ID is not told.
			return nil, nil, errors.New("gateway: the recorded upstream session cannot be resumed")
		}
		r = &resumedSession{c: c, settled: map[string]struct{}{}}
		h.resumed[st.Session] = r
	}
	r.users++
	r.told(st.Settled)
	h.mu.Unlock()
	closeEvicted(evicted)
	var once sync.Once
	release := func() { once.Do(func() { h.release(st.Session, r) }) }
	return &httpTask{Task: r.c.Task(st.Task), session: st.Session, version: st.Version}, release, nil
}

// evictIdleLocked drops the resumed client no run uses that was used
// longest ago and returns it, for the caller to close once h.mu is
// released; nil when every one is in use. h.mu is held.
func (h *httpTasks) evictIdleLocked() *client.Client {
	var eldest string
	for sid, e := range h.resumed {
		if e.users == 0 && (eldest == "" || e.used < h.resumed[eldest].used) {
			eldest = sid
		}
	}
	if eldest == "" {
		return nil
	}
	c := h.resumed[eldest].c
	delete(h.resumed, eldest)
	return c
}

// closeEvicted closes an evicted resumed client, if any: it sends
// nothing, and its session stays open at the upstream for the run that
// resumes it next.
func closeEvicted(c *client.Client) {
	if c != nil {
		_ = c.Close()
	}
}

// close closes the task client and every resumed one. A resumed session
// with a task settled since it was last checked is ended with DELETE when
// none of its tasks needs a run (endIfSettled), within closeEndTimeout for
// them all; the others stay open at the upstream, for the tasks a later
// gateway follows. The task client's own session stays too unless none of
// its tasks is unsettled (closeOwn).
func (h *httpTasks) close() error {
	h.mu.Lock()
	h.closed = true
	resumed := h.resumed
	h.resumed = map[string]*resumedSession{}
	h.mu.Unlock()
	err := h.closeOwn()
	ctx, cancel := context.WithTimeout(context.Background(), closeEndTimeout)
	defer cancel()
	for sid, r := range resumed {
		h.mu.Lock()
		check := r.dirty && !r.pinned
		h.mu.Unlock()
		if check && h.endIfSettled(ctx, sid, r) {
			continue
		}
		err = errors.Join(err, r.c.Close())
	}
	return err
}

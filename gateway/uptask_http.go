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

// maxIdleResumed bounds the clients of resumed 2025-era sessions that
// httpTasks keeps while no run uses them; those in use are kept
// regardless (as many as runs follow tasks of other sessions at once).
const maxIdleResumed = 16

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

	mu      sync.Mutex
	closed  bool
	seq     uint64
	resumed map[string]*resumedSession // by session ID
	// open are the unsettled tasks this process created, by session ID
	// and task ID; pinned the sessions with too many to track, kept open
	// (uptask_sessions.go).
	open   map[string]map[string]struct{}
	pinned map[string]bool
}

// resumedSession is the client of a resumed session and its use.
type resumedSession struct {
	c     *client.Client
	users int
	used  uint64 // httpTasks.seq at the last release: the eldest idle goes first
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
	return &httpTasks{c: c, url: opts.Upstream, opts: co, resumed: map[string]*resumedSession{},
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
	defer h.mu.Unlock()
	if h.closed {
		return own() // fails ErrClosed: the run is retried
	}
	r := h.resumed[st.Session]
	if r == nil {
		o := h.opts
		o.ProtocolVersions = []string{st.Version}
		o.ResumeSession = &client.SessionResume{ID: st.Session, ProtocolVersion: st.Version}
		c, err := client.New(h.url, o)
		if err != nil {
			// The checkpoint's session is malformed; its ID is not told.
			return nil, nil, errors.New("gateway: the recorded upstream session cannot be resumed")
		}
		r = &resumedSession{c: c}
		h.resumed[st.Session] = r
	}
	r.users++
	var once sync.Once
	release := func() { once.Do(func() { h.release(r) }) }
	return &httpTask{Task: r.c.Task(st.Task), session: st.Session, version: st.Version}, release, nil
}

// release ends one use of r and closes the eldest idle resumed clients
// beyond maxIdleResumed (their sessions stay open at the upstream).
func (h *httpTasks) release(r *resumedSession) {
	h.mu.Lock()
	h.seq++
	r.users--
	r.used = h.seq
	var evict []*client.Client
	for h.idleResumed() > maxIdleResumed {
		var eldest string
		for sid, e := range h.resumed {
			if e.users == 0 && (eldest == "" || e.used < h.resumed[eldest].used) {
				eldest = sid
			}
		}
		evict = append(evict, h.resumed[eldest].c)
		delete(h.resumed, eldest)
	}
	h.mu.Unlock()
	for _, c := range evict {
		_ = c.Close() // sends nothing: the session is kept
	}
}

// idleResumed counts the resumed clients no run uses; h.mu is held.
func (h *httpTasks) idleResumed() int {
	n := 0
	for _, e := range h.resumed {
		if e.users == 0 {
			n++
		}
	}
	return n
}

// close closes the task client and every resumed one. The resumed
// sessions stay open at the upstream, for the tasks a later gateway
// follows; the task client's own does too unless none of its tasks is
// unsettled (closeOwn).
func (h *httpTasks) close() error {
	h.mu.Lock()
	h.closed = true
	resumed := h.resumed
	h.resumed = map[string]*resumedSession{}
	h.mu.Unlock()
	err := h.closeOwn()
	for _, r := range resumed {
		err = errors.Join(err, r.c.Close())
	}
	return err
}

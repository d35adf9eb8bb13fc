package console

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// maxForm bounds the body of a console form.
const maxForm = 8 << 10

// pageData is what every template receives.
type pageData struct {
	Title    string
	Prefix   string
	CSRF     string // the session's CSRF token; "" for bearer requests
	Session  bool   // signed in with the form: show "Sign out"
	Live     string // the stream the page listens to: "" none, "all", or a task ID
	Next     string // login: where to go after signing in
	Notice   string
	Message  string // error page
	Status   int
	Overview *overviewView
	List     *listView
	Task     *taskView
	Confirm  *confirmView
}

func (c *Console) page(op operator, title string) pageData {
	d := pageData{Title: title, Prefix: c.prefix, Session: op.nonce != nil}
	if op.nonce != nil {
		d.CSRF = c.keys.csrfToken(op.nonce)
	}
	return d
}

// render executes the template of page into a buffer first, so that a
// failing template never leaves half a page.
func (c *Console) render(w http.ResponseWriter, status int, page string, d pageData) {
	var buf bytes.Buffer
	if err := c.tmpl[page].Execute(&buf, d); err != nil {
		c.log.Error("console: rendering a page failed", "page", page, "err", err)
		http.Error(w, "Internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorPage answers status with a page saying message, which must be
// fixed text: never an error's own text.
func (c *Console) errorPage(w http.ResponseWriter, _ *http.Request, op operator, status int, message string) {
	d := c.page(op, http.StatusText(status))
	d.Message, d.Status = message, status
	c.render(w, status, "error", d)
}

// internalError logs err, with what the console was doing, and answers
// 500 "Internal error".
func (c *Console) internalError(w http.ResponseWriter, r *http.Request, op operator, what string, err error, attrs ...any) {
	c.log.Error("console: "+what+" failed", append(attrs, "err", err)...)
	c.errorPage(w, r, op, http.StatusInternalServerError, "Internal error. The cause is in the server's log.")
}

func (c *Console) serveLoginForm(w http.ResponseWriter, r *http.Request) {
	c.render(w, http.StatusOK, "login", pageData{Title: "Sign in", Prefix: c.prefix, Next: c.safeNext(r.URL.Query().Get("next"))})
}

// safeNext keeps a post-login target only when it is a path of the
// console: never another site.
func (c *Console) safeNext(next string) string {
	if len(next) > 2048 || !strings.HasPrefix(next, c.prefix+"/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\r\n") {
		return c.prefix + "/"
	}
	return next
}

func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if !sameOrigin(r) {
		c.errorPage(w, r, operator{}, http.StatusForbidden, "The sign-in did not come from this console's own page.")
		return
	}
	addr, now, cred := clientAddr(r), c.opts.Now(), r.PostFormValue("token")
	if wait := c.signInBlocked("form", addr, cred, now); wait > 0 {
		c.tooManySignIns(w, wait)
		return
	}
	next := c.safeNext(r.PostFormValue("next"))
	if !c.keys.tokenOK(cred) {
		if wait := c.signInFailed("form", addr, cred, now); wait > 0 {
			c.tooManySignIns(w, wait)
			return
		}
		c.log.Warn("console: sign-in refused", "operator", "form")
		d := pageData{Title: "Sign in", Prefix: c.prefix, Next: next, Message: "That token is not the operator token."}
		c.render(w, http.StatusUnauthorized, "login", d)
		return
	}
	expires := c.opts.Now().Add(c.opts.SessionTTL)
	v, err := c.keys.newSession(expires)
	if err != nil {
		c.internalError(w, r, operator{}, "creating a session", err)
		return
	}
	c.setSessionCookie(w, r, v, expires)
	nonce, _, _ := c.keys.checkSession(v, c.opts.Now())
	c.log.Info("console: signed in", "operator", operator{via: "session", nonce: nonce}.name())
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) serveLogout(w http.ResponseWriter, r *http.Request, op operator) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if !c.csrfOK(r, op) {
		c.errorPage(w, r, op, http.StatusForbidden, "The request did not come from this console's own page.")
		return
	}
	if op.nonce != nil {
		c.signOuts.add(op.nonce, op.expires, c.opts.Now())
	}
	c.setSessionCookie(w, r, "", time.Time{})
	c.log.Info("console: signed out", "operator", op.name())
	http.Redirect(w, r, c.prefix+"/login", http.StatusSeeOther)
}

// serveOverview is the console's home page.
func (c *Console) serveOverview(w http.ResponseWriter, r *http.Request, op operator) {
	ctx, cancel := c.bound(r)
	defer cancel()
	v, err := c.overview(ctx)
	if err != nil {
		c.internalError(w, r, op, "reading the overview", err)
		return
	}
	d := c.page(op, "Overview")
	d.Overview, d.Live = v, c.live("all")
	c.render(w, http.StatusOK, "overview", d)
}

// live returns the stream a page listens to, "" without live updates.
func (c *Console) live(stream string) string {
	if c.opts.Events == nil {
		return ""
	}
	return stream
}

// filterError is a query the console refuses, with the message the 400
// page shows.
type filterError struct{ msg string }

func (e *filterError) Error() string { return e.msg }

// timeLayouts are the forms a created-between bound may take, in UTC
// unless it names a zone: what <input type="datetime-local"> sends, with
// or without seconds, a date, or RFC 3339.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02", time.RFC3339Nano}

func parseTime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if len(v) <= 64 {
		for _, l := range timeLayouts {
			if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, &filterError{"The " + field + " time is not a date and time such as 2026-01-31T13:45."}
}

// parseQuery reads the list's filters from the URL query.
func parseQuery(q url.Values) (backend.OperatorQuery, error) {
	var oq backend.OperatorQuery
	for k, vs := range q {
		switch k {
		case "status", "tool", "tenant", "from", "before", "cursor", "id", "notice":
		default:
			return oq, &filterError{"Unknown filter " + quoteShort(k) + "."}
		}
		if len(vs) > 1 {
			return oq, &filterError{"The filter " + quoteShort(k) + " is given more than once."}
		}
	}
	switch s := task.Status(q.Get("status")); s {
	case "", task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled:
		oq.Status = s
	default:
		return oq, &filterError{"Unknown status " + quoteShort(string(s)) + "."}
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"tool", &oq.Tool}, {"tenant", &oq.Tenant}} {
		v := q.Get(f.name)
		if len(v) > backend.MaxFilterText || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return oq, &filterError{"The " + f.name + " filter is too long or not text."}
		}
		*f.dst = v
	}
	var err error
	if oq.CreatedFrom, err = parseTime("“created from”", q.Get("from")); err != nil {
		return oq, err
	}
	if oq.CreatedBefore, err = parseTime("“created before”", q.Get("before")); err != nil {
		return oq, err
	}
	if !oq.CreatedFrom.IsZero() && !oq.CreatedBefore.IsZero() && oq.CreatedBefore.Before(oq.CreatedFrom) {
		return oq, &filterError{"The “created before” time is earlier than the “created from” time."}
	}
	oq.Cursor = q.Get("cursor")
	if len(oq.Cursor) > 512 {
		return oq, &filterError{"The page token is not valid for these filters."}
	}
	oq.Limit = pageSize
	return oq, nil
}

// quoteShort quotes user input for an error page, cut to 40 bytes of
// valid text (the template escapes it).
func quoteShort(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 40 {
		s = s[:40]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return "“" + s + "”"
}

func (c *Console) serveList(w http.ResponseWriter, r *http.Request, op operator) {
	q := r.URL.Query()
	if id := strings.TrimSpace(q.Get("id")); id != "" {
		if task.ValidID(id) != nil {
			c.errorPage(w, r, op, http.StatusBadRequest, "That is not a task ID: task IDs are visible ASCII, at most 128 characters.")
			return
		}
		http.Redirect(w, r, c.prefix+"/tasks/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	oq, err := parseQuery(q)
	var fe *filterError
	if errors.As(err, &fe) {
		c.errorPage(w, r, op, http.StatusBadRequest, fe.msg)
		return
	}
	ctx, cancel := c.bound(r)
	defer cancel()
	page, err := c.opts.Store.Tasks(ctx, oq)
	switch {
	case errors.Is(err, task.ErrBadCursor):
		c.errorPage(w, r, op, http.StatusBadRequest, "The page token is not valid for these filters. Start again from the first page.")
		return
	case errors.Is(err, backend.ErrBadOperatorQuery):
		c.errorPage(w, r, op, http.StatusBadRequest, "These filters are not valid.")
		return
	case err != nil:
		c.internalError(w, r, op, "listing tasks", err)
		return
	}
	d := c.page(op, "Tasks")
	d.List = newListView(c.prefix, oq, page)
	if q.Get("notice") == "deleted" {
		d.Notice = "The task was deleted."
	}
	d.Live = c.live("all")
	c.render(w, http.StatusOK, "list", d)
}

// loadTask reads the task the path names, answering 404 or 500 itself
// when it cannot; ok reports whether it did not.
func (c *Console) loadTask(w http.ResponseWriter, r *http.Request, op operator) (backend.OperatorTask, bool) {
	id := r.PathValue("id")
	if task.ValidID(id) != nil {
		c.errorPage(w, r, op, http.StatusBadRequest, "That is not a task ID: task IDs are visible ASCII, at most 128 characters.")
		return backend.OperatorTask{}, false
	}
	ctx, cancel := c.bound(r)
	defer cancel()
	ot, err := c.opts.Store.Task(ctx, id)
	if errors.Is(err, task.ErrNotFound) {
		c.errorPage(w, r, op, http.StatusNotFound, "No task has this ID. It may have expired or been deleted.")
		return backend.OperatorTask{}, false
	}
	if err != nil {
		c.internalError(w, r, op, "reading a task", err, "task", TaskRef(id))
		return backend.OperatorTask{}, false
	}
	return ot, true
}

func (c *Console) serveTask(w http.ResponseWriter, r *http.Request, op operator) {
	ot, ok := c.loadTask(w, r, op)
	if !ok {
		return
	}
	d := c.page(op, "Task "+ot.ID)
	d.Task = newTaskView(c.prefix, ot, c.opts.ShowArguments)
	d.Live = c.live(ot.ID)
	switch r.URL.Query().Get("notice") {
	case "cancel":
		d.Notice = "Cancellation was requested. A running job stops at its next check."
	case "retried":
		d.Notice = "This task was created by retrying a failed one."
	}
	c.render(w, http.StatusOK, "task", d)
}

// actions are the console's actions and what their confirmation says.
var actions = map[string]struct{ verb, explain string }{
	"cancel": {"Cancel", "The task's job stops at its next cancellation check (a queued job never runs) and the task ends cancelled. A task that finishes first keeps its outcome."},
	"retry":  {"Retry", "A new task is created with the same tool, arguments and caller, and a fresh attempt budget. The failed task stays failed; its caller is not told of the new one."},
	"delete": {"Delete", "The task, its job and its history are deleted now, before their time to live. Its caller will find no such task."},
}

// allowed reports whether action applies to the task now.
func allowed(action string, ot backend.OperatorTask) bool {
	switch action {
	case "cancel":
		return !ot.Status.Terminal() && !ot.CancelRequested
	case "retry":
		return ot.Status == task.Failed
	case "delete":
		return ot.Status.Terminal()
	}
	return false
}

func (c *Console) serveConfirm(w http.ResponseWriter, r *http.Request, op operator) {
	action := r.PathValue("action")
	a, known := actions[action]
	if !known {
		c.errorPage(w, r, op, http.StatusNotFound, "There is no such page.")
		return
	}
	ot, ok := c.loadTask(w, r, op)
	if !ok {
		return
	}
	if !allowed(action, ot) {
		c.errorPage(w, r, op, http.StatusConflict, notAllowed(action))
		return
	}
	d := c.page(op, a.verb+" task "+ot.ID)
	d.Task = newTaskView(c.prefix, ot, false)
	d.Confirm = &confirmView{Action: action, Verb: a.verb, Explain: a.explain}
	c.render(w, http.StatusOK, "confirm", d)
}

func notAllowed(action string) string {
	switch action {
	case "cancel":
		return "This task has finished or is already being cancelled."
	case "retry":
		return "Only a failed task can be retried."
	}
	return "Only a finished task can be deleted."
}

func (c *Console) serveAction(w http.ResponseWriter, r *http.Request, op operator) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	action, id := r.PathValue("action"), r.PathValue("id")
	if _, known := actions[action]; !known {
		c.errorPage(w, r, op, http.StatusNotFound, "There is no such page.")
		return
	}
	if !c.csrfOK(r, op) {
		c.audit(op, action, id, "refused: cross-site or missing CSRF token")
		c.errorPage(w, r, op, http.StatusForbidden, "The request did not come from this console's own page. Open the task and try again.")
		return
	}
	if task.ValidID(id) != nil {
		c.errorPage(w, r, op, http.StatusBadRequest, "That is not a task ID: task IDs are visible ASCII, at most 128 characters.")
		return
	}
	ctx, cancel := c.bound(r)
	defer cancel()
	var err error
	target := c.prefix + "/tasks/" + url.PathEscape(id)
	switch action {
	case "cancel":
		err = c.opts.Store.Cancel(ctx, id)
		target += "?notice=cancel"
	case "retry":
		var tk task.Task
		if tk, err = c.opts.Store.Retry(ctx, id); err == nil {
			target = c.prefix + "/tasks/" + url.PathEscape(tk.ID()) + "?notice=retried"
		}
	case "delete":
		err = c.opts.Store.Delete(ctx, id)
		target = c.prefix + "/tasks?notice=deleted"
	}
	switch {
	case err == nil:
		c.audit(op, action, id, "done")
		http.Redirect(w, r, target, http.StatusSeeOther)
	case errors.Is(err, task.ErrNotFound):
		c.audit(op, action, id, "not found")
		c.errorPage(w, r, op, http.StatusNotFound, "No task has this ID. It may have expired or been deleted.")
	case errors.Is(err, backend.ErrNotFailed), errors.Is(err, backend.ErrNotFinished):
		c.audit(op, action, id, "not applicable")
		c.errorPage(w, r, op, http.StatusConflict, notAllowed(action))
	default:
		c.audit(op, action, id, "failed")
		c.internalError(w, r, op, "the "+action+" action", err, "task", TaskRef(id))
	}
}

// audit writes the audit line of an action.
func (c *Console) audit(op operator, action, id, outcome string) {
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "console action", slog.String("operator", op.name()),
		slog.String("action", action), slog.String("task", TaskRef(id)), slog.String("outcome", outcome))
}

package console_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/task"
)

func TestNewValidates(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, tc := range []struct {
		name string
		opts console.Options
	}{
		{"no store", console.Options{Token: []byte(token)}},
		{"short token", console.Options{Store: f.st.Operator(), Token: []byte("short")}},
		{"negative streams", console.Options{Store: f.st.Operator(), Token: []byte(token), MaxStreams: -1}},
		{"negative timeout", console.Options{Store: f.st.Operator(), Token: []byte(token), Timeout: -time.Second}},
	} {
		if _, err := console.New(tc.opts); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
}

func TestAccess(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cookie := f.login()
	tampered := cookie[:len(cookie)-2] + "AA"
	if tampered == cookie {
		tampered = cookie[:len(cookie)-2] + "BB"
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no credential", nil, http.StatusUnauthorized},
		{"wrong bearer", map[string]string{"Authorization": "Bearer " + token + "x"}, http.StatusUnauthorized},
		{"empty bearer", map[string]string{"Authorization": "Bearer "}, http.StatusUnauthorized},
		{"basic scheme", map[string]string{"Authorization": "Basic " + token}, http.StatusUnauthorized},
		{"bearer", bearer, http.StatusOK},
		{"session", map[string]string{"Cookie": cookie}, http.StatusOK},
		{"tampered session", map[string]string{"Cookie": tampered}, http.StatusUnauthorized},
		{"made-up session", map[string]string{"Cookie": "taskwire_console=s1.AAAA.BBBB"}, http.StatusUnauthorized},
		{"session with a wrong bearer", map[string]string{"Cookie": cookie, "Authorization": "Bearer nope"}, http.StatusUnauthorized},
	} {
		for _, path := range []string{"/console/", "/console/tasks", "/console/tasks/" + f.completed} {
			r := f.do(http.MethodGet, path, nil, tc.header)
			if r.status != tc.want {
				t.Errorf("%s: GET %s: %d, want %d", tc.name, path, r.status, tc.want)
			}
			if tc.want == http.StatusUnauthorized {
				mustContain(t, tc.name, r.body, `name="token"`)
				mustNotContain(t, tc.name, r.body, "report", "tenant-a", "result-marker")
			}
		}
		if tc.want == http.StatusUnauthorized {
			r := f.do(http.MethodPost, "/console/tasks/"+f.working+"/cancel", url.Values{}, tc.header)
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s: POST cancel: %d, want 401", tc.name, r.status)
			}
		}
	}
	// A session ends at its expiry.
	f.clock.Advance(console.DefaultSessionTTL)
	if r := f.do(http.MethodGet, "/console/", nil, map[string]string{"Cookie": cookie}); r.status != http.StatusUnauthorized {
		t.Errorf("expired session: %d, want 401", r.status)
	}
	if ok, _ := f.st.Operator().Task(context.Background(), f.working); ok.CancelRequested {
		t.Error("an unauthenticated request cancelled a task")
	}
}

func TestLogin(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	same := map[string]string{"Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"}
	if r := f.do(http.MethodGet, "/console/login", nil, nil); r.header.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("Referrer-Policy %q: browsers must send this origin with the console's forms", r.header.Get("Referrer-Policy"))
	}
	if r := f.do(http.MethodGet, "/console/login", nil, nil); r.status != http.StatusOK || !strings.Contains(r.body, `<label for="token">`) {
		t.Errorf("login form: %s", describe(r))
	}
	r := f.do(http.MethodPost, "/console/login", url.Values{"token": {"wrong-token-0123456789"}}, same)
	if r.status != http.StatusUnauthorized || r.header.Get("Set-Cookie") != "" {
		t.Errorf("wrong token: %d, cookie %q", r.status, r.header.Get("Set-Cookie"))
	}
	r = f.do(http.MethodPost, "/console/login", url.Values{"token": {token}},
		map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
	if r.status != http.StatusForbidden || r.header.Get("Set-Cookie") != "" {
		t.Errorf("cross-site login: %d, cookie %q", r.status, r.header.Get("Set-Cookie"))
	}
	for next, want := range map[string]string{
		"/console/tasks?status=failed": "/console/tasks?status=failed",
		"//evil.example/console/":      "/console/",
		"https://evil.example/":        "/console/",
		"/elsewhere":                   "/console/",
	} {
		r = f.do(http.MethodPost, "/console/login", url.Values{"token": {token}, "next": {next}}, same)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != want {
			t.Errorf("next %q: %d to %q, want 303 to %q", next, r.status, r.header.Get("Location"), want)
		}
		ck := r.header.Get("Set-Cookie")
		for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/console/", "Expires="} {
			if !strings.Contains(ck, attr) {
				t.Errorf("cookie %q lacks %s", ck, attr)
			}
		}
		if strings.Contains(ck, "Secure") {
			t.Errorf("cookie %q is Secure over plain HTTP", ck)
		}
	}
	if strings.Contains(f.log.String(), token) {
		t.Error("the log holds the token")
	}
	// Sign out clears the cookie, with the CSRF token only.
	cookie := f.login()
	if r := f.do(http.MethodPost, "/console/logout", url.Values{}, f.session(cookie)); r.status != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d, want 403", r.status)
	}
	other := f.login()
	r = f.do(http.MethodPost, "/console/logout", url.Values{"csrf": {f.csrf(cookie)}}, f.session(cookie))
	if r.status != http.StatusSeeOther || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: %d, cookie %q", r.status, r.header.Get("Set-Cookie"))
	}
	// The signed-out cookie is refused server-side too (a copy of it, kept
	// by whoever saw it, does not outlive the sign-out); other sessions
	// go on.
	if r := f.do(http.MethodGet, "/console/", nil, f.session(cookie)); r.status != http.StatusUnauthorized {
		t.Errorf("the signed-out cookie: %d, want 401", r.status)
	}
	if r := f.do(http.MethodGet, "/console/", nil, f.session(other)); r.status != http.StatusOK {
		t.Errorf("another session after a sign-out: %d, want 200", r.status)
	}
}

func TestOverview(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	r := f.get("/console/")
	if r.status != http.StatusOK {
		t.Fatalf("overview: %s", describe(r))
	}
	mustContain(t, "overview", r.body,
		"<caption>4 tasks held", `href="/console/tasks?tool=report"`, `href="/console/tasks?tool=crunch"`,
		`<a href="/console/tasks?status=failed">1</a>`, `<a href="/console/tasks?status=working">2</a>`,
		"Queue depth by job state", `<th scope="row">available</th><td class="num">2</td>`,
		"1 completed, 1 failed, 0 cancelled; failure rate 50.0 %",
		`<svg class="chart"`, `role="img"`, `<rect class="completed"`, `<rect class="failed"`, "<polyline",
		`data-live="/console/events"`)
	mustNotContain(t, "overview", r.body, "http://", "https://", "arg-marker-1")
	for _, s := range []string{"console.css", "console.js"} {
		if r := f.get("/console/static/" + s); r.status != http.StatusOK || len(r.body) < 100 {
			t.Errorf("%s: %d, %d bytes", s, r.status, len(r.body))
		}
	}
	if r := f.get("/console/static/none.txt"); r.status != http.StatusNotFound {
		t.Errorf("unknown static file: %d", r.status)
	}
	if r := f.get("/console/nowhere"); r.status != http.StatusNotFound {
		t.Errorf("unknown page: %d", r.status)
	}
}

func TestList(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	r := f.get("/console/tasks")
	if r.status != http.StatusOK {
		t.Fatalf("list: %s", describe(r))
	}
	mustContain(t, "list", r.body, f.completed, f.failed, f.working, f.cancelling, "tenant-a", "tenant-b",
		`<label for="f-status">Status</label>`)
	// Newest first.
	if strings.Index(r.body, f.cancelling) > strings.Index(r.body, f.completed) {
		t.Error("the list is not newest first")
	}
	r = f.get("/console/tasks?status=failed")
	mustContain(t, "failed tasks", r.body, f.failed)
	mustNotContain(t, "failed tasks", r.body, f.completed, f.working)
	r = f.get("/console/tasks?tenant=tenant-a&tool=crunch")
	mustContain(t, "tenant-a crunch", r.body, f.working)
	mustNotContain(t, "tenant-a crunch", r.body, f.completed, f.cancelling)
	future := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04")
	if r := f.get("/console/tasks?from=" + future); strings.Contains(r.body, f.working) || !strings.Contains(r.body, "No task matches") {
		t.Errorf("created from the future: %s", describe(r))
	}

	// Lookup by ID.
	r = f.get("/console/tasks?id=" + url.QueryEscape(f.failed))
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/tasks/"+f.failed {
		t.Errorf("lookup: %d to %q", r.status, r.header.Get("Location"))
	}

	// Keyset pages of 50.
	const more = 60
	for range more {
		f.enqueue("bulk", "tenant-c", `{}`)
	}
	seen := map[string]bool{}
	next := "/console/tasks?tenant=tenant-c"
	pages := 0
	for next != "" {
		pages++
		r := f.get(next)
		if r.status != http.StatusOK {
			t.Fatalf("page %d: %s", pages, describe(r))
		}
		for _, m := range taskLink.FindAllStringSubmatch(r.body, -1) {
			if seen[m[1]] {
				t.Errorf("task %s listed twice", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := nextLink.FindStringSubmatch(r.body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if pages != 2 || len(seen) != more {
		t.Errorf("%d pages, %d tasks; want 2 pages of the %d tasks", pages, len(seen), more)
	}
}

func TestTaskPage(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	r := f.get("/console/tasks/" + f.completed)
	if r.status != http.StatusOK {
		t.Fatalf("task page: %s", describe(r))
	}
	mustContain(t, "task page", r.body, f.completed, "completed", "report", "tenant-a", "result-marker",
		"Timeline", `<span class="event created">created</span>`, `<span class="event claimed">claimed</span>`,
		"worker <code>worker-1</code>", "attempt 1", "Hidden: this console does not show tool arguments.",
		`data-live="/console/events?task=`+f.completed+`"`, "Delete…",
		`<span class="event checkpoint">checkpoint</span> · attempt 1 · worker <code>worker-1</code> · 22 bytes`,
		"checkpoint of 22 bytes saved")
	mustNotContain(t, "task page", r.body, "ckpt-marker", "arg-marker-1", "2026-07-28", "tools/call", "user-tenant-a", "Cancel…", "Retry…")
	r = f.get("/console/tasks/" + f.failed)
	mustContain(t, "failed task", r.body, "The tool failed.", "Retry…", "Delete…",
		`<span class="event retry">retry</span> (attempt 1 failed: <span class="category">timeout</span>) — next run at <time>`,
		"failure 1 of 10", `<span class="event failed">failed</span> (attempt 2 failed: <span class="category">permanent</span>)`,
		// Both runs failed: the retried one, and the one that failed the task.
		"2 of 10 failures")
	// The text as read, without the markup.
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(r.body, "")
	mustContain(t, "failed task's text", text, "retry (attempt 1 failed: timeout) — next run at ",
		"failed (attempt 2 failed: permanent)")
	mustNotContain(t, "failed task's text", text, " )", "( ")
	r = f.get("/console/tasks/" + f.working)
	mustContain(t, "working task", r.body, "Cancel…")
	mustNotContain(t, "working task", r.body, "Retry…", "Delete…")

	g := newFixture(t, fixtureOpts{showArgs: true})
	r = g.get("/console/tasks/" + g.completed)
	mustContain(t, "task page with arguments", r.body, "arg-marker-1")
	mustNotContain(t, "task page with arguments", r.body, "2026-07-28", "tools/call", "user-tenant-a")
}

func TestBadInput(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	long := strings.Repeat("x", backend.MaxFilterText+1)
	for _, tc := range []struct {
		path string
		want int
		msg  string
	}{
		{"/console/tasks?status=stuck", 400, "Unknown status"},
		{"/console/tasks?status=failed&status=working", 400, "more than once"},
		{"/console/tasks?colour=red", 400, "Unknown filter"},
		{"/console/tasks?tool=" + long, 400, "too long"},
		{"/console/tasks?tenant=%00", 400, "not text"},
		{"/console/tasks?tenant=%ff", 400, "not text"},
		{"/console/tasks?from=yesterday", 400, "not a date"},
		{"/console/tasks?before=2026-13-45", 400, "not a date"},
		{"/console/tasks?from=2026-02-01&before=2026-01-01", 400, "earlier than"},
		{"/console/tasks?cursor=garbage", 400, "page token is not valid"},
		{"/console/tasks?cursor=c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 400, "page token is not valid"},
		{"/console/tasks?cursor=" + strings.Repeat("c", 600), 400, "page token is not valid"},
		{"/console/tasks?id=has%20space", 400, "not a task ID"},
		{"/console/tasks?id=" + strings.Repeat("a", 200), 400, "not a task ID"},
		{"/console/tasks/has%20space", 400, "not a task ID"},
		{"/console/tasks/no-such-task", 404, "No task has this ID"},
		{"/console/tasks/no-such-task/cancel", 404, "No task has this ID"},
		{"/console/tasks/" + f.completed + "/explode", 404, "no such page"},
		{"/console/tasks/" + f.completed + "/cancel", 409, "finished"},
		{"/console/tasks/" + f.working + "/retry", 409, "Only a failed task"},
		{"/console/tasks/" + f.working + "/delete", 409, "Only a finished task"},
		{"/console/events?task=has%20space", 400, "Bad task ID"},
	} {
		r := f.get(tc.path)
		if r.status != tc.want || !strings.Contains(r.body, tc.msg) {
			t.Errorf("GET %s: %d, want %d with %q:\n%s", tc.path, r.status, tc.want, tc.msg, r.body)
		}
		mustNotContain(t, tc.path, r.body, "sqlite", "SQL", "goroutine", "panic", "backend:", "task: ")
	}
	// A cursor of one filter does not continue another.
	for range 55 {
		f.enqueue("bulk", "tenant-c", `{}`)
	}
	r := f.get("/console/tasks?tenant=tenant-c")
	m := nextLink.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatal("no next page")
	}
	u, _ := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
	cur := u.Query().Get("cursor")
	if r := f.get("/console/tasks?tenant=tenant-a&cursor=" + url.QueryEscape(cur)); r.status != 400 {
		t.Errorf("a cursor of other filters: %d, want 400", r.status)
	}
}

func TestActions(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cookie := f.login()
	csrf := f.csrf(cookie)
	other := f.login()
	otherCSRF := f.csrf(other)
	if csrf == otherCSRF {
		t.Fatal("two sessions share a CSRF token")
	}
	post := func(id, action string, form url.Values, header map[string]string) response {
		return f.do(http.MethodPost, "/console/tasks/"+id+"/"+action, form, header)
	}
	crossSite := f.session(cookie)
	crossSite["Sec-Fetch-Site"] = "cross-site"
	otherOrigin := f.session(cookie)
	otherOrigin["Origin"] = "http://evil.example"
	delete(otherOrigin, "Sec-Fetch-Site")
	for _, tc := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no CSRF token", url.Values{}, f.session(cookie)},
		{"wrong CSRF token", url.Values{"csrf": {flipFirst(csrf)}}, f.session(cookie)},
		{"another session's CSRF token", url.Values{"csrf": {otherCSRF}}, f.session(cookie)},
		{"cross-site", url.Values{"csrf": {csrf}}, crossSite},
		{"other origin", url.Values{"csrf": {csrf}}, otherOrigin},
		{"opaque origin", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": cookie, "Origin": "null"}},
		{"bearer from another site", url.Values{}, map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}},
	} {
		if r := post(f.working, "cancel", tc.form, tc.header); r.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, r.status)
		}
	}
	if ot, _ := f.st.Operator().Task(context.Background(), f.working); ot.CancelRequested {
		t.Fatal("a refused request cancelled the task")
	}

	// The confirmation page, then the action.
	r := f.do(http.MethodGet, "/console/tasks/"+f.working+"/cancel", nil, f.session(cookie))
	mustContain(t, "confirmation", r.body, "Cancel task", `method="post"`, `action="/console/tasks/`+f.working+`/cancel"`,
		"Keep it as it is")
	r = post(f.working, "cancel", url.Values{"csrf": {csrf}}, f.session(cookie))
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/tasks/"+f.working+"?notice=cancel" {
		t.Fatalf("cancel: %s (to %q)", describe(r), r.header.Get("Location"))
	}
	if ot, _ := f.st.Operator().Task(context.Background(), f.working); !ot.CancelRequested {
		t.Error("cancel did not record the intent")
	}

	r = post(f.failed, "retry", url.Values{"csrf": {csrf}}, f.session(cookie))
	loc := r.header.Get("Location")
	if r.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/tasks/") || strings.Contains(loc, f.failed) {
		t.Fatalf("retry: %s (to %q)", describe(r), loc)
	}
	newID := strings.TrimSuffix(strings.TrimPrefix(loc, "/console/tasks/"), "?notice=retried")
	if ot, err := f.st.Operator().Task(context.Background(), newID); err != nil || ot.Status != task.Working || ot.Tool != "report" {
		t.Errorf("retried task: %+v, %v", ot.TaskSummary, err)
	}
	if r := f.get(loc); !strings.Contains(r.body, "created by retrying") {
		t.Errorf("retried task page lacks the notice")
	}

	// A bearer request needs no CSRF token.
	r = f.do(http.MethodPost, "/console/tasks/"+f.completed+"/delete", url.Values{}, bearer)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/tasks?notice=deleted" {
		t.Fatalf("delete: %s", describe(r))
	}
	if _, err := f.st.Operator().Task(context.Background(), f.completed); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("deleted task: %v", err)
	}
	if r := f.get("/console/tasks?notice=deleted"); !strings.Contains(r.body, "The task was deleted.") {
		t.Error("no deletion notice")
	}

	// Actions that do not apply.
	for _, tc := range []struct{ id, action string }{{f.working, "retry"}, {f.working, "delete"}} {
		if r := post(tc.id, tc.action, url.Values{"csrf": {csrf}}, f.session(cookie)); r.status != http.StatusConflict {
			t.Errorf("%s of a working task: %d, want 409", tc.action, r.status)
		}
	}
	if r := post(f.completed, "delete", url.Values{"csrf": {csrf}}, f.session(cookie)); r.status != http.StatusNotFound {
		t.Errorf("delete of a deleted task: %d, want 404", r.status)
	}

	// The audit log names actions and task hashes, never task IDs.
	log := f.log.String()
	for _, want := range []string{
		"action=cancel task=" + console.TaskRef(f.working) + " outcome=done",
		"action=retry task=" + console.TaskRef(f.failed) + " outcome=done",
		"operator=bearer action=delete task=" + console.TaskRef(f.completed) + " outcome=done",
		"outcome=\"refused: cross-site or missing CSRF token\"",
		"outcome=\"not applicable\"", "outcome=\"not found\"",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %q:\n%s", want, log)
		}
	}
	mustNotContain(t, "log", log, f.working, f.failed, f.completed, newID, token, "arg-marker", "result-marker")
}

// TestAuditWithoutLogger checks that a console built without
// Options.Logger still writes its audit lines, to slog.Default, as the
// docs promise every action does.
func TestAuditWithoutLogger(t *testing.T) {
	var buf syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	f := newFixture(t, fixtureOpts{noLogger: true})
	r := f.do(http.MethodPost, "/console/tasks/"+f.working+"/cancel", url.Values{}, map[string]string{"Authorization": "Bearer " + token})
	if r.status != http.StatusSeeOther && r.status != http.StatusOK {
		t.Fatalf("cancel: %s", describe(r))
	}
	mustContain(t, "the default logger", buf.String(), `msg="console action" operator=bearer action=cancel`)
}

func TestTaskRef(t *testing.T) {
	// printf %s abc | sha256sum
	if got, want := console.TaskRef("abc"), "ba7816bf8f01"; got != want {
		t.Errorf("TaskRef(abc) = %s, want %s", got, want)
	}
}

// flipFirst returns s with its first character replaced by another one, so
// that the result never equals s.
func flipFirst(s string) string {
	if s[0] == 'x' {
		return "y" + s[1:]
	}
	return "x" + s[1:]
}

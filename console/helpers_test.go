package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/store/storetest"
	"github.com/taskwire/taskwire/task"
)

const token = "operator-token-0123456789"

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a console over a real SQLite store holding real tasks in
// every state, served on loopback.
type fixture struct {
	t     *testing.T
	st    *sqlite.Store
	c     *console.Console
	srv   *httptest.Server
	log   *syncBuffer
	clock *storetest.Clock // the console's, for session expiry

	completed, failed, working, cancelling string
}

type fixtureOpts struct {
	showArgs   bool
	maxStreams int
	coalesce   time.Duration
	// signIn is the per-address sign-in limit; zero: one that the tests
	// of other things, which sign in wrongly on purpose, never reach.
	signIn, globalSignIn console.SignInLimit
	// credSignIn is the per-credential-class limit; zero: one the tests of
	// other things never reach.
	credSignIn console.SignInLimit
	oauth      *oauth.ResourceServer
	// gauges wraps the store as the console's Options.Gauges; nil: the
	// store itself.
	gauges func(*sqlite.Store) backend.GaugeSource
	// noLogger leaves Options.Logger nil.
	noLogger bool
	// schedules is the console's Options.Schedules.
	schedules console.ScheduleSource
}

func newFixture(t *testing.T, fo fixtureOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if fo.signIn == (console.SignInLimit{}) {
		fo.signIn = console.SignInLimit{Burst: 1000, Every: time.Millisecond}
	}
	if fo.credSignIn == (console.SignInLimit{}) {
		fo.credSignIn = console.SignInLimit{Burst: 1000, Every: time.Millisecond}
	}
	f := &fixture{t: t, st: st, log: &syncBuffer{}, clock: storetest.NewClock(time.Now())}
	var src backend.GaugeSource = st
	if fo.gauges != nil {
		src = fo.gauges(st)
	}
	logger := slog.New(slog.NewTextHandler(f.log, nil))
	if fo.noLogger {
		logger = nil
	}
	c, err := console.New(console.Options{
		Store: st.Operator(), Gauges: src, Events: st.EventPublisher(), Token: []byte(token), ShowArguments: fo.showArgs,
		Logger: logger, Now: f.clock.Now, MaxStreams: fo.maxStreams,
		Coalesce: fo.coalesce, SignInPerAddress: fo.signIn, SignInGlobal: fo.globalSignIn,
		SignInPerCredential: fo.credSignIn, OAuth: fo.oauth, Schedules: fo.schedules,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.srv = httptest.NewServer(c)
	t.Cleanup(func() {
		c.Close()
		f.srv.Close()
	})
	f.completed = f.enqueue("report", "tenant-a", `{"secret":"arg-marker-1"}`)
	f.finish(f.completed, func(l backend.Lease) error {
		lost, err := st.Jobs().(backend.Checkpointer).SaveCheckpoints(ctx, []backend.CheckpointWrite{
			{Lease: l, Data: []byte(`{"page":"ckpt-marker"}`)}})
		if err != nil || lost[0] {
			return fmt.Errorf("checkpoint: lost %v, %w", lost, err)
		}
		return st.Jobs().Complete(ctx, l, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "result-marker"}}}, "")
	})
	f.failed = f.enqueue("report", "tenant-b", `{"n":2}`)
	f.finish(f.failed, func(l backend.Lease) error {
		return st.Jobs().Retry(ctx, l, time.Time{}, "Retrying after a failed attempt.", backend.FailureTimeout)
	})
	f.finish(f.failed, func(l backend.Lease) error {
		return st.Jobs().Fail(ctx, l, mcp.NewError(mcp.CodeInternalError, "The tool failed."), "", backend.FailurePermanent)
	})
	f.working = f.enqueue("crunch", "tenant-a", `{"n":3}`)
	f.cancelling = f.enqueue("crunch", "tenant-b", `{"n":4}`)
	return f
}

func (f *fixture) enqueue(tool, tenant, args string) string {
	f.t.Helper()
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
		Tool: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		f.t.Fatal(err)
	}
	tk, err := f.st.Enqueue(context.Background(), &task.CreationContext{Origin: o,
		Request: task.RequestContext{Endpoint: "main", Tenant: tenant, Principal: "user-" + tenant}}, backend.EnqueueOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return tk.ID()
}

// finish claims the job of id, the only one queued, and ends it.
func (f *fixture) finish(id string, end func(backend.Lease) error) {
	f.t.Helper()
	jobs, err := f.st.Jobs().Claim(context.Background(), backend.ClaimParams{Worker: "worker-1", Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 || jobs[0].TaskID != id {
		f.t.Fatalf("claim %s: %v, %v", id, jobs, err)
	}
	if err := end(jobs[0].Lease); err != nil {
		f.t.Fatal(err)
	}
}

// response is one answer of the console.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request: form (when not nil) as a POST body, with extra
// headers. Every console response must carry Cache-Control: no-store.
func (f *fixture) do(method, path string, form url.Values, header map[string]string) response {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		f.t.Errorf("%s %s: Cache-Control %q, want no-store", method, path, cc)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

var bearer = map[string]string{"Authorization": "Bearer " + token}

// get is an authenticated GET.
func (f *fixture) get(path string) response {
	f.t.Helper()
	return f.do(http.MethodGet, path, nil, bearer)
}

// login signs in with the form and returns the session cookie header.
func (f *fixture) login() string {
	f.t.Helper()
	r := f.do(http.MethodPost, "/console/login", url.Values{"token": {token}, "next": {"/console/tasks"}},
		map[string]string{"Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"})
	if r.status != http.StatusSeeOther {
		f.t.Fatalf("login: %d\n%s", r.status, r.body)
	}
	ck := r.header.Get("Set-Cookie")
	name, _, _ := strings.Cut(ck, ";")
	return name
}

// session returns the headers of a browser request of the session cookie.
func (f *fixture) session(cookie string) map[string]string {
	return map[string]string{"Cookie": cookie, "Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token of the session from a page.
func (f *fixture) csrf(cookie string) string {
	f.t.Helper()
	r := f.do(http.MethodGet, "/console/tasks/"+f.working+"/cancel", nil, f.session(cookie))
	m := csrfField.FindStringSubmatch(r.body)
	if m == nil {
		f.t.Fatalf("no CSRF field in the confirmation page:\n%s", r.body)
	}
	return m[1]
}

// mustContain fails unless body contains every string.
func mustContain(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

func mustNotContain(t *testing.T, what, body string, bad ...string) {
	t.Helper()
	for _, w := range bad {
		if strings.Contains(body, w) {
			t.Errorf("%s contains %q", what, w)
		}
	}
}

func describe(r response) string { return fmt.Sprintf("%d %s", r.status, r.body) }

var (
	taskLink = regexp.MustCompile(`<a class="id" href="/console/tasks/([^"]+)">`)
	nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
)

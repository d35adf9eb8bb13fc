package main

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

var writeScreenshots = flag.Bool("console-screenshots", false, "write the console's screenshots to docs/img")

// chromium returns the browser the test drives: a missing one skips the
// test, except under CI=true, where it fails (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is required under CI=true (.ci/run installs it): none of chromium, chromium-browser, google-chrome is on PATH")
	}
	t.Skip("no Chromium on PATH (chromium, chromium-browser or google-chrome)")
	return ""
}

// TestConsoleInBrowser drives the console of a real `taskwire serve` with
// headless Chromium: it signs in with the form, finds a task by ID,
// cancels another through its page and the confirmation, and saves
// screenshots (to docs/img with -console-screenshots).
func TestConsoleInBrowser(t *testing.T) {
	chrome := chromium(t)
	const tok = "browser-console-token-0123"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "tasks.db")
	out, _ := startServe(t, noEnv, "--store", "sqlite:"+db, "--workers", "0", "--admin-token-file", tokenFile)
	m := consoleLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no console line:\n%s", out)
	}
	base := m[1]

	// Real tasks in the node's store, driven through its job side as a
	// worker would.
	st, err := sqlite.Open(t.Context(), sqlite.Options{Path: db, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	enqueue := func(tool, tenant, args string) string {
		o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
			Tool: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		tk, err := st.Enqueue(t.Context(), &task.CreationContext{Origin: o,
			Request: task.RequestContext{Endpoint: "main", Tenant: tenant, Principal: "user"}}, backend.EnqueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tk.ID()
	}
	work := func(kind string, end func(backend.Lease) error) {
		jobs, err := st.Jobs().Claim(t.Context(), backend.ClaimParams{Worker: "node-1", Kinds: []string{kind}, Limit: 1,
			Lease: time.Minute})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim %s: %v, %v", kind, jobs, err)
		}
		if err := end(jobs[0].Lease); err != nil {
			t.Fatal(err)
		}
	}
	for i, tenant := range []string{"acme", "globex", "acme", "initech"} {
		enqueue("reports.generate", tenant, `{"period":"2026-Q3"}`)
		work("reports.generate", func(l backend.Lease) error {
			if i == 2 {
				return st.Jobs().Fail(t.Context(), l, mcp.NewError(mcp.CodeInternalError, "The report source did not answer."), "",
					backend.FailurePermanent)
			}
			if err := st.Jobs().(backend.ProgressReporter).ReportProgress(t.Context(), l, "rendering", &task.Progress{Current: 1, Total: 2}); err != nil {
				return err
			}
			return st.Jobs().Complete(t.Context(), l, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "report ready"}}}, "")
		})
	}
	sought := enqueue("invoices.reconcile", "acme", `{"month":"2026-11"}`)
	work("invoices.reconcile", func(l backend.Lease) error {
		return st.Jobs().Retry(t.Context(), l, time.Time{}, "Retrying after a failure", backend.FailureTimeout)
	})
	victim := enqueue("exports.build", "globex", `{"rows":1000000}`)

	imgDir := t.TempDir()
	if *writeScreenshots {
		imgDir = filepath.Join("..", "..", "docs", "img")
	}
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(imgDir, name), buf, 0o644)
		})
	}
	text := func(sel chromedp.CSS, dst *string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
			*dst, err = chromedp.Text(sel)(ctx, tg)
			return err
		})
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil { // starts the browser, with no deadline of its own
		t.Fatalf("starting Chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()

	var title, heading, timeline, notice string
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("by-status")),
		text("h1", &title),
		shot("console-overview.png"),

		// Find a task by ID from the header's lookup.
		chromedp.SendKeys(chromedp.ID("lookup-id"), sought),
		chromedp.Submit(chromedp.ID("lookup-id")),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline")),
		text("h1", &heading),
		text("ol.timeline", &timeline),
		shot("console-task.png"),

		// Cancel another through its page and the confirmation.
		chromedp.Navigate(base+"/tasks/"+victim),
		chromedp.WaitVisible(chromedp.CSS("ul.actions")),
		chromedp.Click(chromedp.CSS("ul.actions a")),
		chromedp.WaitVisible(chromedp.CSS("button.danger")),
		shot("console-confirm.png"),
		chromedp.Click(chromedp.CSS("button.danger")),
		chromedp.WaitVisible(chromedp.CSS("p.notice")),
		text("p.notice", &notice),

		chromedp.Navigate(base+"/tasks"),
		chromedp.WaitVisible(chromedp.CSS("table.tasks")),
		shot("console-list.png"),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	if !strings.Contains(title, "Overview") {
		t.Errorf("title after sign-in %q", title)
	}
	if !strings.Contains(heading, sought) {
		t.Errorf("lookup reached %q, want the task %s", heading, sought)
	}
	if !strings.Contains(timeline, "(attempt 1 failed: timeout)") {
		t.Errorf("the sought task's timeline does not say why its run failed: %q", timeline)
	}
	if strings.Contains(timeline, " )") || strings.Contains(timeline, "( ") {
		t.Errorf("the sought task's timeline has a space inside its parentheses: %q", timeline)
	}
	if !strings.Contains(notice, "Cancellation was requested") {
		t.Errorf("notice after cancelling: %q", notice)
	}
	ot, err := st.Operator().Task(t.Context(), victim)
	if err != nil || !ot.CancelRequested {
		t.Errorf("the cancelled task: cancel requested %v, %v", ot.CancelRequested, err)
	}
	for _, name := range []string{"console-overview.png", "console-task.png", "console-confirm.png", "console-list.png"} {
		if fi, err := os.Stat(filepath.Join(imgDir, name)); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
}

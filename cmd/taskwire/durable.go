package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// Names of the durable demo tools; each is also the worker job kind.
const (
	toolReports   = "reports.generate"
	toolApprovals = "approvals.request"
)

// Input bounds of the durable tools, checked on the API node before a task
// is created and again on the worker before the handler runs.
const (
	maxReportRows    = 1_000_000
	maxReportSeconds = 3600
	maxTextLen       = 1000 // accountId, subject, idempotencyKey
	maxDetailsLen    = 4000
	maxCommentLen    = 2000
)

// approvalKey is the input request key of approvals.request: one question
// per task, so one fixed key.
const approvalKey = "approval"

// approvalForm is the form approvals.request shows the user.
var approvalForm = json.RawMessage(`{"type":"object","properties":{` +
	`"approve":{"type":"boolean","title":"Approve","description":"Approve the request?"},` +
	`"comment":{"type":"string","title":"Comment","description":"An optional note for the record"}},` +
	`"required":["approve"]}`)

// ReportInput is the input of reports.generate.
type ReportInput struct {
	AccountID      string  `json:"accountId" jsonschema:"the account to report on"`
	Rows           int     `json:"rows" jsonschema:"rows in the report, 1 to 1000000"`
	Seconds        float64 `json:"seconds" jsonschema:"seconds of simulated work, 0 to 3600"`
	IdempotencyKey string  `json:"idempotencyKey,omitempty" jsonschema:"a retry with the same key and arguments returns the same task"`
}

// Report is the result of reports.generate, and the content of the report
// file it writes.
type Report struct {
	AccountID   string `json:"accountId"`
	Rows        int    `json:"rows"`
	Checksum    string `json:"checksum" jsonschema:"SHA-256 of the account ID and row count, lower-case hexadecimal"`
	GeneratedAt string `json:"generatedAt" jsonschema:"when the report was written, RFC 3339"`
}

// validate checks the bounds that the inferred schema does not express.
func (in ReportInput) validate() error {
	switch {
	case strings.TrimSpace(in.AccountID) == "":
		return errors.New("accountId must not be empty")
	case len(in.AccountID) > maxTextLen:
		return fmt.Errorf("accountId must be at most %d bytes", maxTextLen)
	case in.Rows < 1 || in.Rows > maxReportRows:
		return fmt.Errorf("rows must be between 1 and %d", maxReportRows)
	case math.IsNaN(in.Seconds) || in.Seconds < 0 || in.Seconds > maxReportSeconds:
		return fmt.Errorf("seconds must be between 0 and %d", maxReportSeconds)
	case len(in.IdempotencyKey) > maxTextLen:
		return fmt.Errorf("idempotencyKey must be at most %d bytes", maxTextLen)
	}
	return nil
}

// ApprovalInput is the input of approvals.request.
type ApprovalInput struct {
	Subject        string `json:"subject" jsonschema:"what needs approval, shown to the user"`
	Details        string `json:"details,omitempty" jsonschema:"more context for the approver"`
	IdempotencyKey string `json:"idempotencyKey,omitempty" jsonschema:"a retry with the same key and arguments returns the same task"`
}

// Approval is the result of approvals.request.
type Approval struct {
	Subject   string `json:"subject"`
	Approved  bool   `json:"approved" jsonschema:"true only when the user accepted the form with approve set"`
	Comment   string `json:"comment" jsonschema:"the approver's note, possibly empty"`
	DecidedAt string `json:"decidedAt" jsonschema:"when the decision was recorded, RFC 3339"`
}

func (in ApprovalInput) validate() error {
	switch {
	case strings.TrimSpace(in.Subject) == "":
		return errors.New("subject must not be empty")
	case len(in.Subject) > maxTextLen:
		return fmt.Errorf("subject must be at most %d bytes", maxTextLen)
	case len(in.Details) > maxDetailsLen:
		return fmt.Errorf("details must be at most %d bytes", maxDetailsLen)
	case len(in.IdempotencyKey) > maxTextLen:
		return fmt.Errorf("idempotencyKey must be at most %d bytes", maxTextLen)
	}
	return nil
}

// message is the elicitation message: deterministic in the input, as the
// handler re-runs from the start once the user has answered.
func (in ApprovalInput) message() string {
	m := "Approve: " + in.Subject
	if in.Details != "" {
		m += "\n\n" + in.Details
	}
	return m
}

// durableTools declares the durable demo tools, for the API nodes (Serve)
// and the workers (Work) alike: each creation only validates the input and
// enqueues a job in the store; a worker, in this process or another, does
// the work. Both tools wait inline for 2025-era clients without tasks, as
// every durable tool does unless it sets RequireTasks.
// reportsDir is where reports.generate writes its files.
func durableTools(reportsDir string) *durable.Set {
	var s durable.Set
	durable.Add(&s, durable.Tool[ReportInput, Report]{
		Tool: &mcp.Tool{
			Name:  toolReports,
			Title: "Generate a report",
			Description: "Generate an account report as a durable task: it survives client timeouts and server restarts. " +
				"seconds simulates the work time. Pass idempotencyKey to make retries safe.",
		},
		Run: func(ctx context.Context, job *worker.Job, in ReportInput) (Report, error) {
			return generateReport(ctx, job, in, reportsDir)
		},
		Validate:    ReportInput.validate,
		TaskOptions: durable.TaskOptions{IdempotencyKey: "idempotencyKey"},
	})
	durable.Add(&s, durable.Tool[ApprovalInput, Approval]{
		Tool: &mcp.Tool{
			Name:  toolApprovals,
			Title: "Request an approval",
			Description: "Ask the user to approve something, as a durable task: the task asks through a form " +
				"(input_required) and completes with the decision.",
		},
		Run:         requestApproval,
		Validate:    ApprovalInput.validate,
		TaskOptions: durable.TaskOptions{IdempotencyKey: "idempotencyKey", TaskInput: []string{task.InputElicitationForm}},
	})
	return &s
}

// generateReport simulates in.Seconds of work, then writes the report file
// and returns the report; the input was validated (durableTools). The file, named after the task, is written to a
// temporary file and renamed into place, so a run repeated after a crash or a
// lost lease replaces the same file and never leaves a second copy.
//
// While it works it reports its progress ("row 400 of 1000") every
// progressStep; the runtime writes it to the task at most once per second.
func generateReport(ctx context.Context, job *worker.Job, in ReportInput, dir string) (Report, error) {
	report := func(done int) {
		// The message and numbers are valid by construction; a report
		// is best effort.
		_ = job.ReportProgress(fmt.Sprintf("row %d of %d", done, in.Rows), float64(done), float64(in.Rows))
	}
	if err := simulateWork(ctx, in.Seconds, in.Rows, report); err != nil {
		return Report{}, err
	}
	taskID, attempt := job.TaskID(), job.Attempt()
	r := Report{
		AccountID:   in.AccountID,
		Rows:        in.Rows,
		Checksum:    reportChecksum(in.AccountID, in.Rows),
		GeneratedAt: time.Now().UTC().Format(time.RFC3339),
	}
	if err := writeReport(dir, taskID, attempt, r); err != nil {
		return Report{}, err // worker.Unavailable: retried for the runtime's RetryWindow
	}
	return r, nil
}

// progressStep is how often simulateWork reports the rows done.
const progressStep = 200 * time.Millisecond

// simulateWork spends seconds on rows, calling report with the rows done
// every progressStep, or stops when ctx is done; then it returns the
// cause, so that the runtime releases the job on shutdown and cancels the
// task on a client's request.
func simulateWork(ctx context.Context, seconds float64, rows int, report func(done int)) error {
	if seconds <= 0 {
		return nil
	}
	total := time.Duration(seconds * float64(time.Second))
	start := time.Now()
	end := time.NewTimer(total)
	defer end.Stop()
	tick := time.NewTicker(progressStep)
	defer tick.Stop()
	for {
		select {
		case <-end.C:
			return nil
		case <-tick.C:
			frac := float64(time.Since(start)) / float64(total)
			report(min(rows, int(frac*float64(rows))))
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// reportChecksum is the deterministic checksum of a report: SHA-256 over the
// account ID and the row count, separated by a NUL byte.
func reportChecksum(accountID string, rows int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", accountID, rows))
	return hex.EncodeToString(sum[:])
}

// reportPath is the report file of a task.
func reportPath(dir, taskID string) (string, error) {
	if taskID == "" || strings.ContainsFunc(taskID, func(r rune) bool {
		return !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		return "", worker.Permanent(errors.New("task ID is not safe as a file name"))
	}
	return filepath.Join(dir, taskID+".json"), nil
}

// writeReport writes r as dir/<taskID>.json atomically for the run of the
// job with the given attempt (its fencing token): the run's own temporary
// file in the same directory, dir/.<taskID>.<attempt>.tmp, written, synced,
// then renamed over the final name. The temporary name is the run's alone,
// so a run that lost its lease and still writes never truncates the file of
// the run that took over; a run first removes the file its predecessor may
// have left when a crash interrupted it between writing and renaming. No
// run ever looks at other tasks' files, and the cost of a write does not
// grow with the directory.
func writeReport(dir, taskID string, attempt int64, r Report) error {
	final, err := reportPath(dir, taskID)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return worker.Permanent(err)
	}
	// Reports hold account data: readable by the server's user alone.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fileError("create the reports directory", err)
	}
	if attempt > 1 {
		os.Remove(reportTempPath(dir, taskID, attempt-1)) // a crashed predecessor's, if any
	}
	tmp := reportTempPath(dir, taskID, attempt)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fileError("create the report's temporary file", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return fileError("write the report", err)
	}
	return nil
}

// fileError describes a failed file operation without the file's path,
// which names the task: the worker logs a handler's error text, and task IDs
// stay out of logs. The cause stays matchable (errors.Is(err,
// fs.ErrPermission)). A report that cannot be written is a storage fault
// (a full or failing disk, a directory that went away), so the error is
// marked worker.Unavailable: the job is retried for Options.RetryWindow,
// not only MaxAttempts times, and a fault of minutes does not fail it.
func fileError(what string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = fmt.Errorf("%s: %s: %w", what, pe.Op, pe.Err)
	case errors.As(err, &le):
		err = fmt.Errorf("%s: %s: %w", what, le.Op, le.Err)
	default:
		err = fmt.Errorf("%s: %w", what, err)
	}
	return worker.Unavailable(err)
}

// reportTempPath is the temporary file of one run's report; the task ID was
// checked by reportPath.
func reportTempPath(dir, taskID string, attempt int64) string {
	return filepath.Join(dir, "."+taskID+"."+strconv.FormatInt(attempt, 10)+".tmp")
}

// requestApproval asks the user through a form and completes with the
// decision. The first run records the question (the task turns
// input_required); the run after the answer finds it and returns. Declining
// or cancelling the form is a decision too: approved is false.
func requestApproval(ctx context.Context, job *worker.Job, in ApprovalInput) (Approval, error) {
	raw, err := job.Ask(ctx, approvalKey, mcp.NewElicitFormRequest(in.message(), approvalForm))
	if err != nil {
		return Approval{}, err
	}
	var answer mcp.ElicitResult
	if err := json.Unmarshal(raw, &answer); err != nil {
		return Approval{}, worker.Permanent(err)
	}
	out := Approval{Subject: in.Subject, DecidedAt: time.Now().UTC().Format(time.RFC3339)}
	if answer.Action == mcp.ElicitActionAccept {
		out.Approved, _ = answer.Content["approve"].(bool)
		comment, _ := answer.Content["comment"].(string)
		out.Comment = truncate(comment, maxCommentLen)
	}
	return out, nil
}

// truncate shortens s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

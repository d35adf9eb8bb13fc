package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/logtext"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// TestDefaultPolicyRidesOutAFault checks that the default retry policy
// (DefaultMaxAttempts, DefaultBackoff) keeps a task alive through a fault
// of four minutes, far longer than the waits of the old policy (five
// attempts, about 15 s at most), and that the log says why each run failed.
func TestDefaultPolicyRidesOutAFault(t *testing.T) {
	const fault = 4 * time.Minute
	for seed := range 3 { // DefaultBackoff is random: a few runs
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				start := time.Now()
				err := AddHandler(h.rt, "report", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
					if time.Since(start) < fault {
						return sumOut{}, fmt.Errorf("write the report: %w", errors.New("read-only file system"))
					}
					return sumOut{Sum: job.Failures()}, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				id := h.enqueue(t, testOrigin(t, "report", `{}`, sumSchema), backend.DefaultMaxAttempts)
				h.start()
				j := h.waitStatus(t, id, task.Completed)
				h.stop(t)
				if j.failures < 2 {
					t.Errorf("completed after %d failures; the fault did not last", j.failures)
				}
				logs := h.logs.String()
				if !strings.Contains(logs, `err="write the report: read-only file system"`) {
					t.Errorf("log lacks the error text:\n%s", logs)
				}
				t.Logf("completed after %d failures, %v", j.failures, time.Since(start))
			})
		})
	}
}

// TestPolicySums pins the documented bounds of the default policy: the
// waits before the final failure add up to between 255.5 s and 511 s.
func TestPolicySums(t *testing.T) {
	for range 200 {
		var total time.Duration
		for n := 1; n < backend.DefaultMaxAttempts; n++ {
			total += DefaultBackoff(n)
		}
		if total < 255500*time.Millisecond || total > 511*time.Second {
			t.Fatalf("waits before the final failure add up to %v", total)
		}
	}
}

// TestInterruptedRunsSpareAttempts checks that runs whose lease was lost do
// not use up the job's attempts (MaxAttempts 1 here: a single handler
// failure would fail it), and that a job whose every run is lost (a poison
// pill) fails after Options.MaxInterruptedRuns of them.
func TestInterruptedRunsSpareAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{MaxInterruptedRuns: 3})
		b := newBlockingHandler(false)
		if err := AddHandler(h.rt, "pill", b.handle); err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "pill", `{}`, sumSchema), 1)
		h.start()
		for run := 1; run <= 3; run++ {
			<-b.started
			if j := h.job(t, id); j.failures != 0 || j.interrupted != run-1 {
				t.Fatalf("run %d: %d failures, %d interrupted runs", run, j.failures, j.interrupted)
			}
			h.clock.jump(defaultLease) // the run stalls past its lease, as if its process had died
			<-b.returned
		}
		j := h.waitStatus(t, id, task.Failed)
		h.stop(t)
		want := &mcp.Error{Code: -32603, Message: "The task failed after repeated attempts."}
		if j.failures != 0 || j.interrupted != 3 {
			t.Errorf("poison pill: %d failures, %d interrupted runs", j.failures, j.interrupted)
		}
		if diff := cmp.Diff(want, j.rpcErr); diff != "" {
			t.Errorf("poison pill error (-want +got):\n%s", diff)
		}
		for _, p := range h.store.rescueLog() {
			if p.MaxInterruptedRuns != 3 || p.Limit != 100 {
				t.Fatalf("RescueExpired(%+v), want the options' limits", p)
			}
		}
	})
}

// TestStoreErrorsAreLogged checks that the claim, heartbeat and
// maintenance log lines carry the store error's text.
func TestStoreErrorsAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		b := newBlockingHandler(false)
		if err := AddHandler(h.rt, "slow", b.handle); err != nil {
			t.Fatal(err)
		}
		h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3)
		h.start()
		<-b.started
		h.store.setHeartbeatErr(errors.New("postgres: heartbeat: connection reset by peer"))
		h.store.setClaimErr(&net503{})
		time.Sleep(15 * time.Second)
		h.stop(t)
		logs := h.logs.String()
		for _, want := range []string{
			`msg="worker: heartbeat failed" kind=slow attempt=1 err="postgres: heartbeat: connection reset by peer"`,
			`msg="worker: claim failed" queue=default err="dial tcp: connection refused"`,
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %s:\n%s", want, logs)
			}
		}
		if strings.Contains(logs, "error of type") {
			t.Errorf("log shows error types:\n%s", logs)
		}
	})
}

// net503 is an error of its own type, as drivers return.
type net503 struct{}

func (*net503) Error() string { return "dial tcp: connection refused" }

func TestErrText(t *testing.T) {
	long := strings.Repeat("é", logtext.MaxErrText) // two bytes each
	j := &backend.JobRow{Lease: backend.Lease{TaskID: "tid-123"}, Origin: testOrigin(t, "k",
		`{"path":"/srv/secret","n":12345,"list":["token-abc","ab","tab\there"],"nested":{"key":"/srv/secret/x"}}`, "")}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"short", errText(errors.New("boom")), "boom"},
		{"cut", errText(errors.New(long)), long[:logtext.MaxErrText] + "…(cut)"},
		{"scrubbed", jobErrText(j, fmt.Errorf("open /srv/secret/x for tid-123 with token-abc: ab 12345 %q", "tab\there")),
			`open <argument> for <task> with <argument>: ab <argument> "<argument>"`},
		{"names kept", jobErrText(j, errors.New("path nested key list")), "path nested key list"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

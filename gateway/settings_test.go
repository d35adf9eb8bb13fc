package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/gateway"
)

// TestToolSettingsValidate: every problem of Options.Tools, one line
// each, naming its entry.
func TestToolSettingsValidate(t *testing.T) {
	no := new(false)
	opts := gateway.Options{Upstream: "http://h/mcp", Tools: []gateway.ToolSettings{
		{Match: "slow.*", Task: new(true), Retry: new(true), Timeout: time.Hour, MaxAttempts: 3},
		{Match: ""},
		{Match: "a[", Task: no, Retry: new(true), Timeout: 25 * time.Hour, MaxAttempts: -1},
	}}
	want := []string{
		"Tools[1]: match is empty",
		`Tools[2]: match "a[": syntax error in pattern`,
		"Tools[2]: retry true needs a task tool, and task is false",
		"Tools[2]: timeout must be between 0 (the default) and 24h0m0s, not 25h0m0s",
		"Tools[2]: maxAttempts must not be negative",
	}
	if diff := cmp.Diff(want, strings.Split(opts.Validate().Error(), "\n")); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
}

// TestToolSettings: an entry makes a tool a retry task tool without the
// patterns, another gives an inline tool its own deadline, and New
// refuses an entry that contradicts the patterns, naming both.
func TestToolSettings(t *testing.T) {
	up := newUpstream(t)
	url := startGateway(t, gateway.Options{Upstream: up.url, Tools: []gateway.ToolSettings{
		{Match: "flaky.rpc", Task: new(true), Retry: new(true), MaxAttempts: 3},
		{Match: "slow.build", Timeout: 200 * time.Millisecond},
	}})
	c := newClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := c.Call(ctx, "flaky.rpc", map[string]any{})
	if err != nil || res.Task == nil {
		t.Fatalf("flaky.rpc: %+v %v, want a task", res, err)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(BuildOut{Call: 2}, structured[BuildOut](t, out)); diff != "" {
		t.Errorf("flaky.rpc, retried (-want +got):\n%s", diff)
	}
	inline, err := c.Call(ctx, "slow.build", BuildIn{Steps: 1, HoldAt: 1})
	if err != nil || inline.Task != nil || !inline.Result.IsError || resultText(inline.Result) != "The upstream tool did not answer within 200ms." {
		t.Errorf("slow.build inline with its own timeout: %+v %v", inline, err)
	}

	_, err = gateway.New(ctx, gateway.Options{Upstream: up.url, TaskTools: []string{"slow.*"}, RetryTools: []string{"*"},
		Tools: []gateway.ToolSettings{{Match: "slow.build", Task: new(false)}, {Match: "text.*", Retry: new(true)}}})
	for _, want := range []string{
		`tool "slow.build": TaskTools pattern "slow.*" makes it a task tool, but Tools[0] (match "slow.build") says task false`,
		`tool "text.echo": Tools[1] (match "text.*") says retry true, but it is not a task tool`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New with contradicting settings: %v, want %q", err, want)
		}
	}
}

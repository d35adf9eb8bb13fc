package e2e

import (
	"strings"
	"testing"
)

// TestUsageErrorsOfTheBinary runs the taskwire binary with mistakes on
// the command line of each kind of command: the process prints one line
// saying what is wrong and one pointing at the usage, nothing on stdout,
// and exits 2; asking for help prints the usage to stdout and exits 0.
func TestUsageErrorsOfTheBinary(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		wantHint string // the second line of stderr; "" for help asked for
	}{
		{[]string{"frobnicate"}, 2, "Run 'taskwire help' for usage."},
		{[]string{"serve", "--frobnicate"}, 2, "Run 'taskwire serve -h' for usage."},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--workers", "-1"}, 2, "Run 'taskwire serve -h' for usage."},
		{[]string{"worker", "--frobnicate"}, 2, "Run 'taskwire worker -h' for usage."},
		{[]string{"migrate", "extra"}, 2, "Run 'taskwire migrate -h' for usage."},
		{[]string{"login"}, 2, "Run 'taskwire login -h' for usage."},
		{[]string{"call", "--frobnicate", "text.stats"}, 2, "Run 'taskwire call -h' for usage."},
		{[]string{"task", "get"}, 2, "Run 'taskwire task -h' for usage."},
		{[]string{"help"}, 0, ""},
		{[]string{"serve", "-h"}, 0, ""},
		{[]string{"call", "-h"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runCLI(t, nil, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			if tc.code == 0 {
				if r.stderr != "" || !strings.Contains(r.stdout, "usage: taskwire") && !strings.HasPrefix(r.stdout, "taskwire runs") {
					t.Errorf("help: stderr %q, stdout:\n%s", r.stderr, r.stdout)
				}
				return
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if r.stdout != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "taskwire: ") || lines[1] != tc.wantHint {
				t.Errorf("stdout %q, stderr:\n%s\nwant one line of error, then %q", r.stdout, r.stderr, tc.wantHint)
			}
		})
	}
}

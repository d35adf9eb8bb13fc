package logtext

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestScrubbed(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		taskID  string
		args    string
		secrets []string
		want    string
	}{
		{"nil", nil, "", "", nil, ""},
		{"plain", errors.New(`ERROR: relation "x" does not exist (SQLSTATE 42P01)`), "", "", nil,
			`ERROR: relation "x" does not exist (SQLSTATE 42P01)`},
		{"task ID", errors.New("no row for tsk_123456"), "tsk_123456", "", nil, "no row for <task>"},
		{"argument", errors.New("open /srv/acct-99/x: denied"), "", `{"p":"/srv/acct-99/x","n":12345}`, nil,
			"open <argument>: denied"},
		{"short argument kept", errors.New("bad id"), "", `{"p":"id"}`, nil, "bad id"},
		{"secret", errors.New("token Bearer s3cr3t rejected"), "", "", []string{"", "s3cr3t"}, "token Bearer <redacted> rejected"},
	}
	for _, tt := range tests {
		if got := Scrubbed(tt.err, tt.taskID, json.RawMessage(tt.args), tt.secrets...); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	long := errors.New(strings.Repeat("é", MaxErrText))
	if got := Error(long); len(got) > MaxErrText+len("…(cut)") || !strings.HasSuffix(got, "…(cut)") {
		t.Errorf("long error rendered as %d bytes", len(got))
	}
}

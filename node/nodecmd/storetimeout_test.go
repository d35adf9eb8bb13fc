package nodecmd

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/taskwire/taskwire/store/postgres"
)

// TestStoreTimeoutFlag checks that --store-timeout reaches the store spec,
// defaults to the stores' default, and must be positive.
func TestStoreTimeoutFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		ok   bool
	}{
		{nil, postgres.DefaultTimeout, true},
		{[]string{"--store-timeout", "750ms"}, 750 * time.Millisecond, true},
		{[]string{"--store-timeout", "0"}, 0, false},
		{[]string{"--store-timeout", "-1s"}, 0, false},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		p := Program{Name: "taskwire"}
		cf := p.addCommonFlags(fs)
		if err := parseFlags(fs, append([]string{"--store", "sqlite:x.db"}, tc.args...), io.Discard); err != nil {
			t.Fatal(err)
		}
		spec, _, err := cf.resolve(p.Name, func(string) string { return "" }, io.Discard)
		if (err == nil) != tc.ok || err == nil && spec.Timeout != tc.want {
			t.Errorf("%v: timeout %v, err %v; want %v, ok %v", tc.args, spec.Timeout, err, tc.want, tc.ok)
		}
	}
}

package nodecmd

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/worker"
)

func TestParseQueues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]worker.QueueConfig
		err  string
	}{
		{"", nil, ""},
		{"mail=4", map[string]worker.QueueConfig{"mail": {MaxWorkers: 4}}, ""},
		{"mail=4, reports=1", map[string]worker.QueueConfig{"mail": {MaxWorkers: 4}, "reports": {MaxWorkers: 1}}, ""},
		{"mail", nil, `--queues: "mail" is not name=workers`},
		{"mail=0", nil, `--queues: "mail": the workers must be a number between 1 and 1024`},
		{"mail=x", nil, `--queues: "mail": the workers must be a number between 1 and 1024`},
		{"mail=1,mail=2", nil, `--queues: "mail" is given twice`},
		{"a b=1", nil, `--queues: "a b": a queue name must hold only ASCII letters, digits, '_', '-' and '.', starting with a letter or a digit`},
		{"=1", nil, `--queues: "": a queue name must not be empty`},
	} {
		got, err := parseQueues(tc.in)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("parseQueues(%q) = %v; want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("parseQueues(%q): %v", tc.in, err)
		default:
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("parseQueues(%q) (-want +got):\n%s", tc.in, d)
			}
		}
	}
}

func TestQueueWorkers(t *testing.T) {
	qs := map[string]worker.QueueConfig{"a": {MaxWorkers: 3}, "b": {MaxWorkers: 5}}
	for _, tc := range []struct {
		name   string
		args   []string
		queues map[string]worker.QueueConfig
		want   int
	}{
		{"no queues", nil, nil, 4},
		{"sum of the queues", nil, qs, 8},
		{"--workers given", []string{"--workers", "6"}, qs, 6},
	} {
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		workers := fs.Int("workers", 4, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := queueWorkers(fs, *workers, tc.queues); got != tc.want {
			t.Errorf("%s: workers = %d, want %d", tc.name, got, tc.want)
		}
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Bounds of what a report keeps.
const (
	// maxLine bounds one line of input; a longer one is an error.
	maxLine = 16 << 20
	// maxTestOutput bounds the output kept for one running test, printed
	// if it fails; the rest is dropped with a note.
	maxTestOutput = 1 << 20
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// A service whose absence skips tests outside CI: a skip message that
// holds every one of match names it.
type service struct {
	label string
	match []string
}

var services = []service{
	{"PostgreSQL tests (TASKWIRE_TEST_POSTGRES_URL unreachable)", []string{"PostgreSQL", "unreachable"}},
	{"PostgreSQL tests that start a private server (no server binaries, or no postgres user)", []string{"PostgreSQL server"}},
	{"browser tests (no Chromium on PATH)", []string{"Chromium"}},
}

// testOutput is the output of one running test.
type testOutput struct {
	lines   []string
	size    int
	dropped bool
}

// report reads one event stream and writes what plain go test would.
type report struct {
	w       io.Writer
	running map[[2]string]*testOutput // by package and test
	skipped []map[string]int          // per service: tests by package
	err     error
}

func newReport(w io.Writer) *report {
	r := &report{w: w, running: make(map[[2]string]*testOutput), skipped: make([]map[string]int, len(services))}
	for i := range r.skipped {
		r.skipped[i] = make(map[string]int)
	}
	return r
}

// read consumes the stream until EOF.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() && r.err == nil {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			r.print(string(line) + "\n")
			continue
		}
		r.event(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return r.err
}

// event handles one event.
func (r *report) event(e event) {
	if e.Test == "" {
		switch {
		case e.Action == "build-output":
			r.print(e.Output)
		case e.Action == "output" && e.Output != "PASS\n":
			r.print(e.Output)
		}
		return
	}
	key := [2]string{e.Package, e.Test}
	switch e.Action {
	case "output":
		o := r.running[key]
		if o == nil {
			o = &testOutput{}
			r.running[key] = o
		}
		o.add(e.Output)
	case "fail":
		if o := r.running[key]; o != nil {
			for _, l := range o.lines {
				r.print(l)
			}
			if o.dropped {
				r.print("    (testreport: the rest of this test's output was dropped)\n")
			}
		}
		delete(r.running, key)
	case "skip":
		if o := r.running[key]; o != nil {
			if i := o.service(); i >= 0 {
				r.skipped[i][e.Package]++
			}
		}
		delete(r.running, key)
	case "pass":
		delete(r.running, key)
	}
}

// add keeps one line of output, unless it is go test's own chatter that
// plain go test does not print.
func (o *testOutput) add(line string) {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(line, p) {
			return
		}
	}
	if o.size+len(line) > maxTestOutput {
		o.dropped = true
		return
	}
	o.size += len(line)
	o.lines = append(o.lines, line)
}

// service returns the index in services of what the skipped test's
// message names, or -1.
func (o *testOutput) service() int {
	msg := strings.Join(o.lines, "")
	for i, s := range services {
		all := true
		for _, m := range s.match {
			all = all && strings.Contains(msg, m)
		}
		if all {
			return i
		}
	}
	return -1
}

func (r *report) print(s string) {
	if r.err == nil {
		_, r.err = io.WriteString(r.w, s)
	}
}

// summary returns one line per service whose absence skipped tests.
func (r *report) summary(suite string) []string {
	var lines []string
	for i, s := range services {
		pkgs := r.skipped[i]
		if len(pkgs) == 0 {
			continue
		}
		n := 0
		names := make([]string, 0, len(pkgs))
		for p, c := range pkgs {
			n += c
			names = append(names, p)
		}
		slices.Sort(names)
		lines = append(lines, fmt.Sprintf("skipped in %s: %s: %d tests in %s", suite, s.label, n, strings.Join(names, ", ")))
	}
	return lines
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// measure is one figure read back from the text report of a
// "durablebench run": the final table's rates, the p99 latencies named in
// its settings column, and the CPU time per job each worker phase prints.
type measure struct {
	Name  string  // phase and measurement, e.g. "pg-worker taskwire postgres: worker throughput, no-op handler"
	Value float64 // in Unit
	Unit  string  // "jobs/s", "tasks/s", "rows/s", "%", "ms" (p99) or "us/job" (CPU)
}

// cpuPerJobPrefix starts the line in which a worker phase reports the CPU
// time it used per job (see cpuUse.perJob).
const cpuPerJobPrefix = "CPU per job: "

// parseReport reads the text a "durablebench run" printed and returns its
// measures in the order they appear. It reads only what every durablebench
// since the reference commit of the comparison (58eaab9) prints the same
// way, so that a binary built at an older commit can be compared with the
// current one: the "== phase" section headers, each section's "CPU per job"
// line, and the final table whose header is "phase measurement rate
// settings" (columns aligned by text/tabwriter). It fails when the table is
// missing or a row or CPU line cannot be read, so that a change of the
// format is noticed rather than compared as nothing.
func parseReport(r io.Reader) ([]measure, error) {
	var (
		out     []measure
		section string
		cols    []int // rune offsets of the table's columns while inside it
		table   bool  // the table has been seen
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case cols != nil:
			if strings.TrimSpace(text) == "" {
				cols = nil
				continue
			}
			ms, err := parseTableRow([]rune(text), cols)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			out = append(out, ms...)
		case strings.HasPrefix(text, "== "):
			section, _, _ = strings.Cut(strings.TrimPrefix(text, "== "), " ")
		case strings.HasPrefix(strings.TrimSpace(text), cpuPerJobPrefix):
			ms, err := parseCPUPerJob(section, strings.TrimSpace(text))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			out = append(out, ms...)
		case strings.HasPrefix(text, "phase ") && strings.Contains(text, " measurement ") && strings.Contains(text, " rate ") && strings.HasSuffix(text, " settings"):
			// The header is ASCII, so its byte offsets are rune offsets;
			// rows are cut by runes, as text/tabwriter aligns them (the
			// table holds "→").
			cols = []int{0, strings.Index(text, " measurement ") + 1, strings.Index(text, " rate ") + 1, strings.Index(text, " settings") + 1}
			table = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the report: %w", err)
	}
	if !table {
		return nil, fmt.Errorf("no figure table (a line \"phase  measurement  rate  settings\") in the report")
	}
	return out, nil
}

// parseTableRow reads one row of the final table: its rate, and the p99
// latency its settings column names, if any.
func parseTableRow(row []rune, cols []int) ([]measure, error) {
	cell := func(i int) string {
		lo := min(cols[i], len(row))
		hi := len(row)
		if i+1 < len(cols) {
			hi = min(cols[i+1], len(row))
		}
		return strings.TrimSpace(string(row[lo:hi]))
	}
	phase, what, rate, settings := cell(0), cell(1), cell(2), cell(3)
	num, unit, ok := strings.Cut(rate, " ")
	v, err := strconv.ParseFloat(num, 64)
	if phase == "" || what == "" || !ok || unit == "" || err != nil {
		return nil, fmt.Errorf("unreadable figure row %q", string(row))
	}
	name := phase + " " + what
	out := []measure{{Name: name, Value: v, Unit: unit}}
	if _, after, found := strings.Cut(settings, "p99 "); found {
		d, err := parseDur(after)
		if err != nil {
			return nil, fmt.Errorf("figure row %q: p99: %w", string(row), err)
		}
		out = append(out, measure{Name: name + ": p99", Value: float64(d) / float64(time.Millisecond), Unit: "ms"})
	}
	return out, nil
}

// parseCPUPerJob reads a worker phase's line "CPU per job: this process
// 58us, the benchmark's PostgreSQL backends 100us" (the second part only
// when the backends were known).
func parseCPUPerJob(section, line string) ([]measure, error) {
	if section == "" {
		return nil, fmt.Errorf("%q outside any phase", line)
	}
	var out []measure
	for part := range strings.SplitSeq(strings.TrimPrefix(line, cpuPerJobPrefix), ", ") {
		i := strings.LastIndexByte(part, ' ')
		if i < 0 {
			return nil, fmt.Errorf("unreadable %q", line)
		}
		d, err := parseDur(part[i+1:])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		out = append(out, measure{Name: section + " CPU per job, " + part[:i], Value: float64(d) / float64(time.Microsecond), Unit: "us/job"})
	}
	return out, nil
}

// parseDur reads a duration as fmtDur prints it ("1.23s", "4.56ms",
// "789us"), ignoring what follows it.
func parseDur(s string) (time.Duration, error) {
	if i := strings.IndexAny(s, ",;) "); i >= 0 {
		s = s[:i]
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

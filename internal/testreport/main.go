// Command testreport turns the event stream of `go test -json` back into
// what a plain `go test` prints (package lines, and the output of failed
// tests only), and records which tests were skipped for want of a service
// the suite needs: PostgreSQL (TASKWIRE_TEST_POSTGRES_URL unreachable) or
// Chromium. scripts/test.sh, behind `make test`, runs every suite through
// it and prints the recorded lines at the end, so that a run on a machine
// without them says what it did not test.
//
// Usage:
//
//	go test -json ./... | testreport -suite NAME [-summary FILE]
//
// The summary lines ("skipped in NAME: PostgreSQL tests (...): 12 tests")
// go to standard output after the stream ends and, with -summary, are
// appended to FILE. Lines that are not JSON events (a build error printed
// by go itself) are copied as they are. testreport exits 0 unless it
// cannot read its input or write its output: whether the tests passed is
// go test's exit status.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	suite := flag.String("suite", "", "name of the suite, for the summary lines")
	summary := flag.String("summary", "", "file to append the summary lines to")
	flag.Parse()
	r := newReport(os.Stdout)
	err := r.read(os.Stdin)
	lines := r.summary(*suite)
	for _, l := range lines {
		if _, werr := fmt.Println(l); err == nil {
			err = werr
		}
	}
	if err == nil && *summary != "" && len(lines) > 0 {
		err = appendLines(*summary, lines)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}

// appendLines appends lines to the file at path, creating it if needed.
func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open summary: %w", err)
	}
	for _, l := range lines {
		if _, err := io.WriteString(f, l+"\n"); err != nil {
			f.Close()
			return fmt.Errorf("write summary: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close summary: %w", err)
	}
	return nil
}

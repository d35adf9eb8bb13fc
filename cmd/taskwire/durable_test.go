package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteReportTouchesOnlyItsTask checks that a report write replaces the
// task's own temporary file left by an interrupted run, and leaves every
// other file, other tasks' temporary files included, alone.
func TestWriteReportTouchesOnlyItsTask(t *testing.T) {
	dir := t.TempDir()
	others := []string{".other.1.tmp", ".other.2.tmp", "other.json", ".task1.7.tmp"}
	for _, name := range append([]string{".task1.2.tmp"}, others...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Run 3: run 2's file is its crashed predecessor's.
	if err := writeReport(dir, "task1", 3, Report{AccountID: "a", Rows: 1}); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(others), "task1.json")
	slices.Sort(want)
	if got := reportFiles(t, dir); !slices.Equal(got, want) {
		t.Errorf("reports dir holds %v, want %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "task1.json"))
	if err != nil || !strings.Contains(string(b), `"accountId": "a"`) {
		t.Errorf("task1.json = %q, %v", b, err)
	}
}

// TestWriteReportIsPrivate: a report and the directory created for it are
// readable by the server's user alone, also when the report replaces one
// written with a wider mode.
func TestWriteReportIsPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows files have no Unix permission bits")
	}
	dir := filepath.Join(t.TempDir(), "reports")
	if err := writeReport(dir, "task1", 1, Report{AccountID: "a", Rows: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "task2.json"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReport(dir, "task2", 1, Report{AccountID: "a", Rows: 1}); err != nil {
		t.Fatal(err)
	}
	got := map[string]os.FileMode{}
	for _, p := range []string{dir, filepath.Join(dir, "task1.json"), filepath.Join(dir, "task2.json")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		got[filepath.Base(p)] = fi.Mode().Perm()
	}
	want := map[string]os.FileMode{"reports": 0o700, "task1.json": 0o600, "task2.json": 0o600}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
}

// TestWriteReportRunsShareNoFile lets a run that lost its lease still be
// writing its report when the run that took over writes the same report:
// the late bytes of the first run must not land in the final file.
func TestWriteReportRunsShareNoFile(t *testing.T) {
	dir := t.TempDir()
	stale, err := os.OpenFile(reportTempPath(dir, "task1", 1), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	if _, err := stale.WriteString(`{"partial": `); err != nil {
		t.Fatal(err)
	}
	if err := writeReport(dir, "task1", 2, Report{AccountID: "a", Rows: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := stale.WriteString(`"late bytes of run 1, which lost its lease"}`); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "task1.json"))
	var r Report
	if err != nil || json.Unmarshal(b, &r) != nil || r.AccountID != "a" {
		t.Errorf("task1.json = %q, %v; want run 2's report", b, err)
	}
}

// TestWriteReportCostIsIndependentOfTheDirectory checks that a report write
// does not scan the reports directory: its allocations are the same beside
// thousands of other reports as in an empty directory. (A scan allocates for
// every entry.)
func TestWriteReportCostIsIndependentOfTheDirectory(t *testing.T) {
	allocs := func(files int) float64 {
		dir := t.TempDir()
		for i := range files {
			if err := os.WriteFile(filepath.Join(dir, "t"+strconv.Itoa(i)+".json"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := Report{AccountID: "a", Rows: 1}
		return testing.AllocsPerRun(20, func() {
			if err := writeReport(dir, "task1", 1, r); err != nil {
				t.Fatal(err)
			}
		})
	}
	empty, full := allocs(0), allocs(2000)
	if full > empty+5 {
		t.Errorf("writeReport allocates %.0f times beside 2000 files, %.0f times in an empty directory", full, empty)
	}
}

// TestWriteReportErrorsNameNoPath checks that a failed write's error, which
// the worker logs, carries the cause but not the file's path (it names the
// task).
func TestWriteReportErrorsNameNoPath(t *testing.T) {
	dir := t.TempDir()
	// A directory in the report's place: the rename fails.
	if err := os.MkdirAll(filepath.Join(dir, "task1.json", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeReport(dir, "task1", 1, Report{AccountID: "a", Rows: 1})
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		t.Fatalf("writeReport over a directory = %v, want the system's error", err)
	}
	if strings.Contains(err.Error(), "task1") || strings.Contains(err.Error(), dir) {
		t.Errorf("error %q names the file", err)
	}
	// A storage fault: retried for the runtime's RetryWindow, not failed
	// after MaxAttempts quick retries.
	if !strings.HasPrefix(err.Error(), "worker: unavailable: ") {
		t.Errorf("writeReport's error %q is not marked worker.Unavailable", err)
	}
	if got := reportFiles(t, dir); !slices.Equal(got, []string{"task1.json"}) {
		t.Errorf("reports dir holds %v after the failed write", got)
	}
}

// BenchmarkWriteReport writes one report beside n others.
func BenchmarkWriteReport(b *testing.B) {
	for _, n := range []int{0, 20000} {
		b.Run("files="+strconv.Itoa(n), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, "t"+strconv.Itoa(i)+".json"), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			r := Report{AccountID: "a", Rows: 1}
			for b.Loop() {
				if err := writeReport(dir, "task1", 1, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

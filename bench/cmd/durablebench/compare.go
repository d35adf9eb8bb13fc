package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// compareConfig is the command line of "durablebench compare".
type compareConfig struct {
	Base       string        // git ref of the baseline
	Head       string        // git ref of the contender; empty: the working tree
	Rounds     int           // runs of each side, alternating
	RunTimeout time.Duration // upper bound of one run
	Verbose    bool          // copy every run's report to stderr
	RunArgs    []string      // passed to "durablebench run" on both sides
}

// side is one of the two builds being compared.
type side struct {
	label string // "base" or "head"
	desc  string // what it was built from, for the report
	bin   string // the durablebench binary
	runs  [][]measure
}

// parseCompareFlags parses "durablebench compare [flags] [-- run flags]".
// The run flags are checked with this build's own flag set, which is a
// superset of older builds' for every flag a comparison needs.
func parseCompareFlags(args []string, stderr io.Writer) (compareConfig, config, error) {
	var c compareConfig
	fs := flag.NewFlagSet("durablebench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: durablebench compare [-base ref] [-head ref] [-rounds R] [-- run flags]")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Base, "base", "main", "git ref of the baseline; it is built in a temporary git worktree")
	fs.StringVar(&c.Head, "head", "", "git ref to compare with the baseline; empty: the working tree, uncommitted changes included")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds; each runs both sides once, the side that starts alternating from round to round")
	fs.DurationVar(&c.RunTimeout, "run-timeout", 20*time.Minute, "upper bound of one run; a run still going then is interrupted and fails the comparison")
	fs.BoolVar(&c.Verbose, "v", false, "copy every run's full report to standard error")
	if err := fs.Parse(args); err != nil {
		return compareConfig{}, config{}, err
	}
	c.RunArgs = fs.Args()
	switch {
	case c.Base == "":
		return compareConfig{}, config{}, usageError{"-base must name a git ref"}
	case c.Rounds < 1 || c.Rounds > 50:
		return compareConfig{}, config{}, usageError{"-rounds must be between 1 and 50"}
	case c.RunTimeout <= 0 || c.RunTimeout > 2*time.Hour:
		return compareConfig{}, config{}, usageError{"-run-timeout must be positive and at most 2h"}
	}
	rc, err := parseFlags(c.RunArgs, io.Discard)
	if err != nil {
		return compareConfig{}, config{}, usageError{fmt.Sprintf("run flags %q: %v", c.RunArgs, err)}
	}
	return c, rc, nil
}

// runCompare implements "durablebench compare": it builds durablebench at
// the base ref and at the head (a ref or the working tree), each in a
// temporary git worktree removed at the end (on failure and interruption
// too), runs both alternately with the same run flags for the given rounds,
// and prints every measure's median and range on both sides and the ratio
// head/base of the medians. It fails before building anything when a ref
// is unknown or a selected phase needs PostgreSQL and it cannot be reached,
// and it fails as soon as any run fails.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cc, rc, err := parseCompareFlags(args, stderr)
	if err != nil {
		return err
	}
	top, err := gitOutput(ctx, "", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("compare must run inside the taskwire git repository: %w", err)
	}
	baseSHA, err := resolveCommit(ctx, top, cc.Base)
	if err != nil {
		return err
	}
	headSHA := ""
	if cc.Head != "" {
		if headSHA, err = resolveCommit(ctx, top, cc.Head); err != nil {
			return err
		}
	}
	if rc.needsPG() {
		if err := checkPostgres(ctx, rc.pgURL()); err != nil {
			return err
		}
	}

	tmp, err := os.MkdirTemp("", "durablebench-compare-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	var worktrees []string
	defer func() {
		// The worktrees go even when ctx was cancelled by an interrupt.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		var errs []error
		for _, wt := range worktrees {
			if _, e := gitOutput(cctx, top, "worktree", "remove", "--force", wt); e != nil {
				errs = append(errs, e)
			}
		}
		if e := os.RemoveAll(tmp); e != nil {
			errs = append(errs, e)
		}
		if _, e := gitOutput(cctx, top, "worktree", "prune"); e != nil {
			errs = append(errs, e)
		}
		if e := errors.Join(errs...); e != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", e))
		}
	}()
	checkout := func(label, sha string) (string, error) {
		wt := filepath.Join(tmp, label)
		if _, err := gitOutput(ctx, top, "worktree", "add", "--detach", wt, sha); err != nil {
			return "", err
		}
		worktrees = append(worktrees, wt)
		return wt, nil
	}

	base := &side{label: "base", desc: fmt.Sprintf("%s (%.12s)", cc.Base, baseSHA)}
	head := &side{label: "head", desc: describeWorkTree(ctx, top)}
	baseDir, err := checkout("base", baseSHA)
	if err != nil {
		return err
	}
	headDir := top
	if headSHA != "" {
		head.desc = fmt.Sprintf("%s (%.12s)", cc.Head, headSHA)
		if headDir, err = checkout("head", headSHA); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		s   *side
		dir string
	}{{base, baseDir}, {head, headDir}} {
		b.s.bin = filepath.Join(tmp, "durablebench-"+b.s.label)
		fmt.Fprintf(stderr, "compare: building durablebench of the %s, %s\n", b.s.label, b.s.desc)
		if err := goBuild(ctx, filepath.Join(b.dir, "bench"), b.s.bin); err != nil {
			return fmt.Errorf("building the %s (%s): %w", b.s.label, b.s.desc, err)
		}
	}

	sides := []*side{base, head}
	for r := range cc.Rounds {
		for k := range sides {
			s := sides[(r+k)%len(sides)]
			start := time.Now()
			ms, err := runOnce(ctx, cc, s, tmp, stderr)
			if err != nil {
				return fmt.Errorf("round %d, %s (%s): %w", r+1, s.label, s.desc, err)
			}
			s.runs = append(s.runs, ms)
			fmt.Fprintf(stderr, "compare: round %d/%d, %s: %d measures in %s\n", r+1, cc.Rounds, s.label, len(ms), time.Since(start).Round(time.Second))
		}
	}
	fmt.Fprintf(stdout, "durablebench compare: base %s, head %s; %d rounds alternating; run flags %q\n\n", base.desc, head.desc, cc.Rounds, cc.RunArgs)
	printCompare(stdout, base, head)
	return nil
}

// runOnce runs one side's durablebench with the run flags and parses its
// report. The run is bounded by the run timeout; when it expires (or ctx
// ends) the run gets SIGINT, so that it drops its schemas and stops its
// server, and is killed if it has not exited 30 s later.
func runOnce(ctx context.Context, cc compareConfig, s *side, dir string, stderr io.Writer) ([]measure, error) {
	ctx, cancel := context.WithTimeout(ctx, cc.RunTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"run"}, cc.RunArgs...)...)
	cmd.Dir = dir
	cmd.Stdout = &out
	cmd.Stderr = &out
	if cc.Verbose {
		cmd.Stdout = io.MultiWriter(&out, stderr)
		cmd.Stderr = cmd.Stdout
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return nil, fmt.Errorf("durablebench run: %w; the end of its output:\n%s", err, lastLines(out.String(), 15))
	}
	ms, err := parseReport(&out)
	if err != nil {
		return nil, fmt.Errorf("reading its report: %w", err)
	}
	return ms, nil
}

// printCompare prints one row per measure, in the order the head reports
// them followed by any only the base reports: the median and range of both
// sides, and head/base of the medians ("n/a" where a side lacks it).
func printCompare(w io.Writer, base, head *side) {
	type key struct{ name, unit string }
	var order []key
	values := map[key][2][]float64{}
	for i, s := range []*side{head, base} {
		for _, run := range s.runs {
			for _, m := range run {
				k := key{m.Name, m.Unit}
				v, seen := values[k]
				if !seen {
					order = append(order, k)
				}
				v[1-i] = append(v[1-i], m.Value)
				values[k] = v
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tunit\tbase median (min–max)\thead median (min–max)\thead/base")
	for _, k := range order {
		v := values[k]
		ratio := "n/a"
		if len(v[0]) > 0 && len(v[1]) > 0 && median(v[0]) != 0 {
			ratio = fmt.Sprintf("%.2fx", median(v[1])/median(v[0]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.name, k.unit, spread(v[0]), spread(v[1]), ratio)
	}
	_ = tw.Flush()
}

// spread renders a side's values of one measure as "median (min–max)".
func spread(vs []float64) string {
	if len(vs) == 0 {
		return "n/a"
	}
	if len(vs) == 1 {
		return fmtValue(vs[0])
	}
	return fmt.Sprintf("%s (%s–%s)", fmtValue(median(vs)), fmtValue(slices.Min(vs)), fmtValue(slices.Max(vs)))
}

// fmtValue prints a value with three significant digits or as an integer.
func fmtValue(v float64) string {
	if v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// resolveCommit returns the commit ref names in the repository at top.
func resolveCommit(ctx context.Context, top, ref string) (string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", usageError{fmt.Sprintf("git ref %q may not start with '-'", ref)}
	}
	sha, err := gitOutput(ctx, top, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("unknown git ref %q: no such commit in this repository", ref)
	}
	return sha, nil
}

// describeWorkTree names the working tree: its HEAD commit, and whether
// it has uncommitted changes.
func describeWorkTree(ctx context.Context, top string) string {
	sha, err := gitOutput(ctx, top, "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "the working tree"
	}
	desc := "the working tree at " + sha
	if st, err := gitOutput(ctx, top, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		desc += " with uncommitted changes"
	}
	return desc
}

// gitOutput runs git in dir (the current directory when empty) and
// returns its trimmed standard output.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// goBuild builds ./cmd/durablebench of the bench module in dir into bin.
func goBuild(ctx context.Context, dir, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/durablebench")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %w:\n%s", err, lastLines(string(out), 15))
	}
	return nil
}

// checkPostgres fails unless the database at url answers within 5 s.
func checkPostgres(ctx context.Context, url string) error {
	if err := checkLoopbackURL(url); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("PostgreSQL unreachable (the selected phases need it; -pg-url after -- names it): %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("PostgreSQL unreachable: %w", err)
	}
	return nil
}

// lastLines returns at most the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

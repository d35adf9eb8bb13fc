package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// printReport writes the results table and the throughput ratios.
func printReport(w io.Writer, sc scenario, results []targetResult) {
	multi := false
	for _, r := range results {
		multi = multi || len(r.Rounds) > 1
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "target\treq/s\tp50\tp99\tnon-2xx\tbad body\tsocket errors\tstatus\t"
	if multi {
		head += "rounds (req/s)\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range results {
		name := r.Target.Name
		switch {
		case r.Skipped != "":
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\tSKIPPED\t\n", name)
		case r.Result.Requests == 0:
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\tFAILED\t\n", name)
		default:
			status := "ok"
			if r.Err != nil {
				status = "FAILED"
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%d\t%d\t%d\t%s\t", name,
				r.Result.ReqPerSec(), fmtLatency(r.Result.P50US), fmtLatency(r.Result.P99US),
				r.Result.Non2xx, r.Result.BadBody, r.Result.SocketErrors(), status)
			if multi {
				fmt.Fprintf(tw, "%s\t", fmtRounds(r.Rounds))
			}
			fmt.Fprintln(tw)
		}
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	fmt.Fprintln(w, "ratios of req/s:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range sc.Ratios {
		if r, ok := ratio(results, p[0], p[1]); ok {
			fmt.Fprintf(tw, "  %s/%s\t%.2fx\t(%.1f%%)", p[0], p[1], r, 100*r)
			if multi {
				if rs := roundRatios(results, p[0], p[1]); rs != nil {
					fmt.Fprintf(tw, "\tper round: %s", fmtRatios(rs))
				}
			}
			fmt.Fprintln(tw)
		} else {
			fmt.Fprintf(tw, "  %s/%s\tn/a\t\n", p[0], p[1])
		}
	}
	_ = tw.Flush()
	goals := sc.Goals(results)
	if len(goals) == 0 {
		return
	}
	fmt.Fprintln(w, "goals:")
	for _, g := range goals {
		fmt.Fprintf(w, "  %s\n", g)
	}
}

// goal is the outcome of one performance goal for taskwire.
type goal struct {
	Desc  string
	Value string // measured ratio, or "n/a"
	Known bool   // whether the goal could be evaluated
	Met   bool
}

// String renders the goal for the report.
func (g goal) String() string {
	verdict := "NOT MET"
	switch {
	case !g.Known:
		verdict = "not evaluated"
	case g.Met:
		verdict = "met"
	}
	return fmt.Sprintf("%s: %s, %s", g.Desc, g.Value, verdict)
}

// evalGoals evaluates the taskwire throughput goals: at least 7x the faster
// of the two go-sdk variants, and at least 70% of the bare handler.
func evalGoals(results []targetResult) []goal {
	vsSDK := goal{Desc: "taskwire >= 7x go-sdk (the faster of gosdk, gosdk-legacy)", Value: "n/a"}
	best, bestName := 0.0, ""
	for _, name := range []string{"gosdk", "gosdk-legacy"} {
		if r, ok := cleanRate(results, name); ok && r > best {
			best, bestName = r, name
		}
	}
	if tw, ok := cleanRate(results, "taskwire"); ok && best > 0 {
		r := tw / best
		vsSDK = goal{Desc: vsSDK.Desc, Value: fmt.Sprintf("%.2fx vs %s", r, bestName), Known: true, Met: r >= 7}
	}
	vsBare := goal{Desc: "taskwire >= 70% of bare", Value: "n/a"}
	if r, ok := ratio(results, "taskwire", "bare"); ok {
		vsBare = goal{Desc: vsBare.Desc, Value: fmt.Sprintf("%.1f%%", 100*r), Known: true, Met: r >= 0.70}
	}
	return []goal{vsSDK, vsBare}
}

// fmtRounds formats the req/s of every round.
func fmtRounds(rounds []float64) string {
	parts := make([]string, len(rounds))
	for i, r := range rounds {
		parts[i] = fmt.Sprintf("%.0f", r)
	}
	return strings.Join(parts, " ")
}

// ratio returns the throughput of target a divided by that of target b,
// and false if either has no clean result.
func ratio(results []targetResult, a, b string) (float64, bool) {
	ra, oka := cleanRate(results, a)
	rb, okb := cleanRate(results, b)
	if !oka || !okb || rb == 0 {
		return 0, false
	}
	return ra / rb, true
}

// cleanRate returns the req/s of the named target if it ran without errors.
func cleanRate(results []targetResult, name string) (float64, bool) {
	for _, r := range results {
		if r.Target.Name == name && r.Skipped == "" && r.Err == nil && r.Result.Requests > 0 {
			return r.Result.ReqPerSec(), true
		}
	}
	return 0, false
}

// fmtLatency formats a latency in microseconds for the table.
func fmtLatency(us float64) string {
	d := time.Duration(us * float64(time.Microsecond))
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%dus", d/time.Microsecond)
	}
}

// roundRatios returns the throughput ratio of targets a and b in each
// measured round, or nil unless both ran every round cleanly. Targets are
// measured one after the other within a round, so a round's ratio compares
// them under nearly the same load from the rest of the machine.
func roundRatios(results []targetResult, a, b string) []float64 {
	ra, oka := cleanRounds(results, a)
	rb, okb := cleanRounds(results, b)
	if !oka || !okb || len(ra) != len(rb) || len(ra) == 0 {
		return nil
	}
	out := make([]float64, len(ra))
	for i := range ra {
		if rb[i] == 0 {
			return nil
		}
		out[i] = ra[i] / rb[i]
	}
	return out
}

// cleanRounds returns the per-round req/s of the named target if it ran
// without errors.
func cleanRounds(results []targetResult, name string) ([]float64, bool) {
	for _, r := range results {
		if r.Target.Name == name && r.Skipped == "" && r.Err == nil {
			return r.Rounds, true
		}
	}
	return nil, false
}

// fmtRatios formats per-round ratios, then their median.
func fmtRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	sorted := slices.Clone(rs)
	slices.Sort(sorted)
	return fmt.Sprintf("%s (median %.2fx)", strings.Join(parts, " "), sorted[(len(sorted)-1)/2])
}

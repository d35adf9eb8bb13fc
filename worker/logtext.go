package worker

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the error texts the runtime logs.
const (
	// maxErrText bounds the error text of one log line.
	maxErrText = 1000
	// minScrubbed is the shortest argument string scrubbed from a
	// handler's error text: shorter ones are too likely to match words.
	minScrubbed = 4
	// maxScrubbed bounds the argument strings scrubbed from one text.
	maxScrubbed = 256
)

// Placeholders of scrubbed values.
const (
	placeholderTask     = "<task>"
	placeholderArgument = "<argument>"
)

// errText renders an error for the log: its text, cut to maxErrText bytes
// (on a character boundary) and marked when cut. Store errors carry no task
// IDs, arguments or principals; handler errors go through jobErrText.
func errText(err error) string { return cut(err.Error(), maxErrText) }

// jobErrText renders a handler's error for the log, as errText does, after
// replacing the job's task ID and every string of its arguments of at
// least minScrubbed bytes with placeholders: a handler that wraps an
// argument (a path, a URL, an account) into its error does not put it in
// the log. It is a safety net, not a licence: handlers should keep secrets
// out of their errors, since a value derived from an argument (a decoded
// token, a record fetched with it) is not recognised.
func jobErrText(j *Job, err error) string {
	// Cut generously before replacing, so the work is bounded, and to the
	// log's bound after.
	s := cut(err.Error(), 8*maxErrText)
	if j.TaskID != "" {
		s = strings.ReplaceAll(s, j.TaskID, placeholderTask)
	}
	for _, v := range argumentStrings(j.rawArguments()) {
		s = strings.ReplaceAll(s, v, placeholderArgument)
	}
	return cut(s, maxErrText)
}

// argumentStrings returns the distinct values (member names excluded) of
// a JSON value that are at least minScrubbed bytes long as text: strings,
// as they are and as %q would escape them, and numbers as written;
// longest first so that a value is replaced before the values it
// contains; at most maxScrubbed of them.
func argumentStrings(raw json.RawMessage) []string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if len(raw) == 0 || d.Decode(&v) != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if len(s) >= minScrubbed && !seen[s] && len(out) < maxScrubbed {
			seen[s] = true
			out = append(out, s)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			add(v)
			if q := strconv.Quote(v); q[1:len(q)-1] != v {
				add(q[1 : len(q)-1])
			}
		case json.Number:
			add(string(v))
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return out
}

// cut shortens s to at most n bytes on a character boundary, marking the
// cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(cut)"
}

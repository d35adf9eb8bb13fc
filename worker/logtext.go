package worker

import (
	"cmp"
	"encoding/json"
	"slices"
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

// argumentStrings returns the distinct string values (member names
// excluded) of a JSON value that are at least minScrubbed bytes long,
// longest first so that a string is replaced before the strings it
// contains; at most maxScrubbed of them.
func argumentStrings(raw json.RawMessage) []string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if len(v) >= minScrubbed && !seen[v] && len(out) < maxScrubbed {
				seen[v] = true
				out = append(out, v)
			}
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

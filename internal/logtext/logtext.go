// Package logtext renders errors for operational logs: bounded, and with
// the values a log must never carry (task IDs, argument strings) replaced
// by placeholders. The worker runtime and the server share it.
package logtext

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the error texts rendered.
const (
	// MaxErrText bounds the error text of one log line.
	MaxErrText = 1000
	// minScrubbed is the shortest argument string scrubbed from an
	// error text: shorter ones are too likely to match words.
	minScrubbed = 4
	// maxScrubbed bounds the argument strings scrubbed from one text.
	maxScrubbed = 256
)

// Placeholders of scrubbed values.
const (
	PlaceholderTask     = "<task>"
	PlaceholderArgument = "<argument>"
	PlaceholderSecret   = "<redacted>"
)

// Error renders an error for the log: its text (for a PostgreSQL error,
// SQLSTATE included), cut to MaxErrText bytes on a character boundary and
// marked when cut. Use it for errors that carry no task IDs or arguments,
// such as store errors; a nil error renders as "".
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Cut(err.Error(), MaxErrText)
}

// Scrubbed renders err as Error does, after replacing taskID (when not
// empty) and every string of the JSON arguments of at least 4 bytes (as
// they are, as %q would escape them, and numbers as written) with
// placeholders, so that an application error that wraps an argument does
// not put it in the log. Each non-empty secret (a session ID, a token) is
// replaced too. It is a safety net: a value derived from an argument is not
// recognised.
func Scrubbed(err error, taskID string, arguments json.RawMessage, secrets ...string) string {
	if err == nil {
		return ""
	}
	// Cut generously before replacing, so the work is bounded, and to the
	// log's bound after.
	s := Cut(err.Error(), 8*MaxErrText)
	if taskID != "" {
		s = strings.ReplaceAll(s, taskID, PlaceholderTask)
	}
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, PlaceholderSecret)
		}
	}
	for _, v := range argumentStrings(arguments) {
		s = strings.ReplaceAll(s, v, PlaceholderArgument)
	}
	return Cut(s, MaxErrText)
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

// Cut shortens s to at most n bytes on a character boundary, marking the
// cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(cut)"
}

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSplitWords: --upstream-cmd splits as a POSIX shell splits a simple
// command's words, without expansions, and refuses what it cannot split
// or what only a shell would give meaning to.
func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "node server.js", want: []string{"node", "server.js"}},
		{in: "  node \t server.js\n", want: []string{"node", "server.js"}},
		{in: "", want: nil},
		{in: `python -m "my server" 'it''s'`, want: []string{"python", "-m", "my server", "its"}},
		{in: `a 'b "c" d'`, want: []string{"a", `b "c" d`}},
		{in: `a "b 'c' d"`, want: []string{"a", "b 'c' d"}},
		{in: `a\ b c`, want: []string{"a b", "c"}},
		{in: `"a\"b" "\$HOME" "\x"`, want: []string{`a"b`, "$HOME", `\x`}},
		{in: `'\n' ''`, want: []string{`\n`, ""}},
		{in: "a\\\nb", want: []string{"ab"}},
		{in: `$HOME ~/x *.js` + " `id`", want: []string{"$HOME", "~/x", "*.js", "`id`"}},
		{in: "a#b", want: []string{"a#b"}},
		{in: `"a|b" 'c;d' e\&f`, want: []string{"a|b", "c;d", "e&f"}},
		{in: `node 'server.js`, err: "an unterminated single quote"},
		{in: `node "server.js`, err: "an unterminated double quote"},
		{in: `node "a\"`, err: "an unterminated double quote"},
		{in: `node \`, err: "a trailing backslash escapes nothing"},
		{in: `node server.js | tee log`, err: `'|' is shell syntax, and no shell runs the command: quote it, or run a shell explicitly (sh -c '...')`},
		{in: `node s.js > out`, err: `'>' is shell syntax, and no shell runs the command: quote it, or run a shell explicitly (sh -c '...')`},
		{in: `node s.js # comment`, err: `'#' is shell syntax, and no shell runs the command: quote it, or run a shell explicitly (sh -c '...')`},
	} {
		got, err := splitWords(tc.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.err || tc.err == "" && !cmp.Equal(tc.want, got) {
			t.Errorf("splitWords(%q) = %q, %q; want %q, %q", tc.in, got, gotErr, tc.want, tc.err)
		}
	}
}

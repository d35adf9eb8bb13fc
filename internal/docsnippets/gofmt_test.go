package docsnippets

import (
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocSnippetsAreGofmted checks that every Go block of the docs is
// formatted as gofmt formats it, so that what readers copy is what gofmt
// would write. Statements are checked inside a function, one tab in.
func TestDocSnippetsAreGofmted(t *testing.T) {
	root := moduleRoot(t)
	for _, f := range docs(t, root) {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		snips, err := Extract(filepath.ToSlash(f), string(md))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snips {
			if s.Skip != "" {
				continue
			}
			if got, want, ok := formatted(s); !ok {
				t.Errorf("%s:%d: the snippet is not gofmt-formatted; gofmt writes:\n%s\ninstead of:\n%s", s.File, s.Line, want, got)
			}
		}
	}
}

// formatted reports whether s's code is as gofmt formats it, with the
// code and gofmt's version of it.
func formatted(s Snippet) (got, want string, ok bool) {
	p, err := classify(s)
	if err != nil {
		return s.Code, err.Error(), false // TestDocSnippetsCompile reports it
	}
	code := strings.TrimRight(s.Code, "\n")
	switch p.kind {
	case fullFile:
		out, err := format.Source([]byte(code + "\n"))
		if err != nil {
			return code, err.Error(), false
		}
		want = strings.TrimRight(string(out), "\n")
	case declarations:
		const head = "package p\n\n"
		out, err := format.Source([]byte(head + code + "\n"))
		if err != nil {
			return code, err.Error(), false
		}
		want = strings.TrimRight(strings.TrimPrefix(string(out), head), "\n")
	case statements:
		lines := strings.Split(code, "\n")
		for i, l := range lines {
			if l != "" {
				lines[i] = "\t" + l
			}
		}
		const head = "package p\n\nfunc _() {\n"
		out, err := format.Source([]byte(head + strings.Join(lines, "\n") + "\n}\n"))
		if err != nil {
			return code, err.Error(), false
		}
		body := strings.TrimSuffix(strings.TrimRight(strings.TrimPrefix(string(out), head), "\n"), "}")
		lines = strings.Split(strings.TrimRight(body, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, "\t")
		}
		want = strings.Join(lines, "\n")
	}
	return code, want, code == want
}

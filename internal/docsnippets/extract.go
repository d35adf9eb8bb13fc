// Package docsnippets extracts the Go snippets of the project's Markdown
// documentation and turns them into Go packages, so that a test can build
// every snippet of README.md and docs/*.md and fail, naming the Markdown
// file and line, when one no longer compiles.
//
// # Marker rules
//
// Every ```go block is compiled, and must be formatted as gofmt formats it
// (statements as they would be inside a function). A block is one of:
//
//   - a complete file: it starts with a package clause and lists its
//     imports, and is built as it is, in a package of its own;
//   - top-level declarations (types, funcs, vars): built in a package of
//     their own, with the imports they need added from the package names
//     they use (the module's packages and the standard library);
//   - statements: wrapped in a function returning error, so that
//     "return err" works; the variables they declare count as used.
//
// An HTML comment on the line right before the fence changes that:
//
//	<!-- snippet: group NAME -->   the block joins the other blocks of
//	                                the same file marked with NAME, in one
//	                                package: a guide that builds up code
//	                                over several blocks
//	<!-- snippet: skip REASON -->   the block is not compiled: it is
//	                                deliberately not Go, or deliberately
//	                                partial; REASON says why
//
// A block that is not Go at all should rather be fenced as ```text,
// ```sh or ```json. A marker that is not followed by a ```go fence, or
// that this package does not know, is an error. Declarations that a
// group's blocks use but a reader need not see (a helper standing for the
// application's own code) go into a hidden block, an HTML comment that
// opens with "<!-- snippet: hidden NAME" on a line of its own and ends
// with "-->" on a line of its own; its lines are Go declarations of group
// NAME.
package docsnippets

import (
	"fmt"
	"regexp"
	"strings"
)

// Snippet is one ```go block (or hidden block) of a Markdown file.
type Snippet struct {
	// File is the Markdown file's path, as given to Extract.
	File string
	// Line is the 1-based line of the snippet's first code line in File.
	Line int
	// Code is the block's text, without the fences and without the
	// indentation of the opening fence.
	Code string
	// Group is the group marker's NAME, or empty for a block of its own.
	Group string
	// Skip is the skip marker's reason, or empty when the block is built.
	Skip string
	// Hidden is set for a hidden block.
	Hidden bool
}

// marker matches a one-line snippet marker comment.
var marker = regexp.MustCompile(`^<!--\s*snippet:\s*(\S+)\s*(.*?)\s*-->$`)

// hiddenStart matches the first line of a hidden block.
var hiddenStart = regexp.MustCompile(`^<!--\s*snippet:\s*hidden\s+(\S+)\s*$`)

// Extract returns the ```go blocks and hidden blocks of the Markdown text
// md, read from file. It fails, naming file and line, on an unknown or
// malformed marker, a marker not followed by a ```go fence, and an
// unterminated fence or hidden block.
func Extract(file, md string) ([]Snippet, error) {
	lines := strings.Split(md, "\n")
	var (
		out     []Snippet
		pending *Snippet // the marker waiting for its fence
		pendAt  int
	)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if m := hiddenStart.FindStringSubmatch(trimmed); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: snippet marker is not followed by a ```go fence", file, pendAt)
			}
			start := i + 1
			var code []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "-->"; i++ {
				code = append(code, lines[i])
			}
			if i == len(lines) {
				return nil, fmt.Errorf("%s:%d: hidden snippet is not closed by a line \"-->\"", file, start)
			}
			out = append(out, Snippet{File: file, Line: start + 1, Code: strings.Join(code, "\n"), Group: m[1], Hidden: true})
			continue
		}
		if m := marker.FindStringSubmatch(trimmed); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: snippet marker is not followed by a ```go fence", file, pendAt)
			}
			s := Snippet{File: file}
			switch m[1] {
			case "group":
				if m[2] == "" || strings.ContainsAny(m[2], " \t") {
					return nil, fmt.Errorf("%s:%d: snippet group needs one NAME", file, i+1)
				}
				s.Group = m[2]
			case "skip":
				if m[2] == "" {
					return nil, fmt.Errorf("%s:%d: snippet skip needs a reason", file, i+1)
				}
				s.Skip = m[2]
			default:
				return nil, fmt.Errorf("%s:%d: unknown snippet marker %q (want group, skip or hidden)", file, i+1, m[1])
			}
			pending, pendAt = &s, i+1
			continue
		}
		fence, info, ok := openingFence(line)
		if !ok {
			if pending != nil && trimmed != "" {
				return nil, fmt.Errorf("%s:%d: snippet marker is not followed by a ```go fence", file, pendAt)
			}
			continue
		}
		indent := line[:strings.Index(line, fence)]
		start := i + 1
		var code []string
		for i++; i < len(lines); i++ {
			if t := strings.TrimSpace(lines[i]); strings.HasPrefix(t, fence) && strings.Trim(t, string(fence[0])) == "" {
				break
			}
			code = append(code, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: fence is not closed", file, start)
		}
		if info != "go" {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: snippet marker is not followed by a ```go fence", file, pendAt)
			}
			continue
		}
		s := Snippet{File: file}
		if pending != nil {
			s = *pending
			pending = nil
		}
		s.Line = start + 1
		s.Code = strings.Join(code, "\n")
		out = append(out, s)
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: snippet marker is not followed by a ```go fence", file, pendAt)
	}
	return out, nil
}

// openingFence reports whether line opens a fenced code block, with the
// fence (three or more backticks or tildes) and the first word of its info
// string.
func openingFence(line string) (fence, info string, ok bool) {
	t := strings.TrimLeft(line, " \t")
	if len(line)-len(t) > 12 { // deep enough to be inside something else
		return "", "", false
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			rest := strings.TrimSpace(t[n:])
			if c == '`' && strings.Contains(rest, "`") {
				return "", "", false
			}
			if f := strings.Fields(rest); len(f) > 0 {
				info = f[0]
			}
			return t[:n], info, true
		}
	}
	return "", "", false
}

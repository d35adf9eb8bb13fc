package docsnippets

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want []Snippet
	}{
		{
			name: "go blocks, others ignored",
			md:   "# T\n\n```go\nx := 1\n```\n\n```sh\nls\n```\n\n```go\ntype T int\n```\n",
			want: []Snippet{
				{File: "a.md", Line: 4, Code: "x := 1"},
				{File: "a.md", Line: 12, Code: "type T int"},
			},
		},
		{
			name: "markers",
			md:   "<!-- snippet: group g1 -->\n```go\ntype T int\n```\n\n<!-- snippet: skip shows a signature only -->\n```go\nfunc F(x) y\n```\n",
			want: []Snippet{
				{File: "a.md", Line: 3, Code: "type T int", Group: "g1"},
				{File: "a.md", Line: 8, Code: "func F(x) y", Skip: "shows a signature only"},
			},
		},
		{
			name: "hidden block",
			md:   "text\n<!-- snippet: hidden g\nvar ep int\n-->\n",
			want: []Snippet{{File: "a.md", Line: 3, Code: "var ep int", Group: "g", Hidden: true}},
		},
		{
			name: "indented fence in a list",
			md:   "- item:\n\n  ```go\n  if true {\n  \tx()\n  }\n  ```\n",
			want: []Snippet{{File: "a.md", Line: 4, Code: "if true {\n\tx()\n}"}},
		},
		{
			name: "a go fence shown inside a longer fence is not a block",
			md:   "````markdown\n```go\nnot code\n```\n````\n",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract("a.md", tt.md)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Extract (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtractErrors(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"marker before prose", "<!-- snippet: group g -->\ntext\n```go\nx\n```\n", "a.md:1: snippet marker is not followed by a ```go fence"},
		{"marker before another fence", "<!-- snippet: skip why -->\n```sh\nls\n```\n", "a.md:1: snippet marker is not followed by a ```go fence"},
		{"marker at the end", "text\n<!-- snippet: skip why -->\n", "a.md:2: snippet marker is not followed by a ```go fence"},
		{"unknown marker", "<!-- snippet: ignore -->\n```go\nx\n```\n", `a.md:1: unknown snippet marker "ignore"`},
		{"skip without reason", "<!-- snippet: skip -->\n```go\nx\n```\n", "a.md:1: snippet skip needs a reason"},
		{"group without name", "<!-- snippet: group -->\n```go\nx\n```\n", "a.md:1: snippet group needs one NAME"},
		{"unclosed fence", "```go\nx := 1\n", "a.md:1: fence is not closed"},
		{"unclosed hidden block", "<!-- snippet: hidden g\nvar x int\n", "a.md:1: hidden snippet is not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract("a.md", tt.md)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Extract error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	imports := NewImports(map[string]string{
		"fmt":                                 "fmt",
		"github.com/taskwire/taskwire/server": "server",
		"github.com/taskwire/taskwire/store/memory":   "memory",
		"github.com/taskwire/taskwire/session/memory": "memory",
	}, nil)
	tests := []struct {
		name  string
		snips []Snippet
		want  map[string]string // file name to content
		err   string
	}{
		{
			name:  "a full file is kept as it is",
			snips: []Snippet{{File: "R.md", Line: 5, Code: "package main\n\nfunc main() {}"}},
			want:  map[string]string{"snippet000.go": "//line R.md:5\npackage main\n\nfunc main() {}\n"},
		},
		{
			name:  "declarations get their imports",
			snips: []Snippet{{File: "R.md", Line: 5, Code: "func f() { fmt.Println(server.New) }"}},
			want: map[string]string{"snippet000.go": "package snippet\n\nimport (\n\t\"fmt\"\n\t\"github.com/taskwire/taskwire/server\"\n)\n\n" +
				"//line R.md:5\nfunc f() { fmt.Println(server.New) }\n"},
		},
		{
			name:  "statements are wrapped and their variables used",
			snips: []Snippet{{File: "R.md", Line: 9, Code: "x, err := f()\nfmt.Println(x)"}},
			want: map[string]string{"snippet000.go": "package snippet\n\nimport (\n\t\"fmt\"\n)\n\n" +
				"func _() error {\n//line R.md:9\nx, err := f()\nfmt.Println(x)\n_ = x\n_ = err\nreturn nil\n}\n"},
		},
		{
			name: "a group's names are not packages",
			snips: []Snippet{
				{File: "R.md", Line: 3, Code: "type fmt struct{}", Group: "g"},
				{File: "R.md", Line: 9, Code: "var server int", Group: "g", Hidden: true},
				{File: "R.md", Line: 12, Code: "_ = server.X\nreturn nil", Group: "g"},
			},
			want: map[string]string{
				"snippet000.go": "package snippet\n\n//line R.md:3\ntype fmt struct{}\n",
				"snippet001.go": "package snippet\n\n//line R.md:9\nvar server int\n",
				"snippet002.go": "package snippet\n\nfunc _() error {\n//line R.md:12\n_ = server.X\nreturn nil\n}\n",
			},
		},
		{
			name: "a file's imports serve that file only",
			snips: []Snippet{
				{File: "R.md", Line: 3, Code: "package snippet\n\nimport \"fmt\"\n\nvar _ = fmt.Sprint", Group: "g"},
				{File: "R.md", Line: 12, Code: "fmt.Println()", Group: "g"},
			},
			want: map[string]string{
				"snippet000.go": "//line R.md:3\npackage snippet\n\nimport \"fmt\"\n\nvar _ = fmt.Sprint\n",
				"snippet001.go": "package snippet\n\nimport (\n\t\"fmt\"\n)\n\nfunc _() error {\n//line R.md:12\nfmt.Println()\nreturn nil\n}\n",
			},
		},
		{
			name:  "an ambiguous package name",
			snips: []Snippet{{File: "R.md", Line: 2, Code: "m, _ := memory.New()"}},
			err:   `R.md:2: package name "memory" is ambiguous`,
		},
		{
			name:  "an undeclared name",
			snips: []Snippet{{File: "R.md", Line: 2, Code: "ep.AddTool()"}},
			err:   "R.md:2: ep is declared neither in the snippet nor in its group",
		},
		{
			name:  "a syntax error at its line",
			snips: []Snippet{{File: "R.md", Line: 20, Code: "x := 1\ny := )"}},
			err:   "R.md:21: expected operand",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkgs, err := Generate(tt.snips, imports)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Generate error %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(pkgs) != 1 {
				t.Fatalf("%d packages, want 1", len(pkgs))
			}
			got := map[string]string{}
			for name, src := range pkgs[0].Files {
				got[name] = string(src)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Generate (-want +got):\n%s", diff)
			}
		})
	}
}

package docsnippets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs are the Markdown files whose snippets must compile, relative to the
// module root.
func docs(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for i, f := range files {
		files[i], _ = filepath.Rel(root, f)
	}
	return files
}

// prefer settles the package names that two importable packages share.
var prefer = map[string]string{
	"memory": "github.com/taskwire/taskwire/store/memory",
	"rand":   "math/rand/v2",
}

// TestDocSnippetsCompile builds every ```go block of README.md and
// docs/*.md (see the package doc for the markers that group or skip
// blocks) with one go build over all of them.
func TestDocSnippetsCompile(t *testing.T) {
	root := moduleRoot(t)
	var snips []Snippet
	for _, f := range docs(t, root) {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Extract(filepath.ToSlash(f), string(md))
		if err != nil {
			t.Fatal(err)
		}
		snips = append(snips, s...)
	}
	if len(snips) == 0 {
		t.Fatal("no Go snippets found: is the module root right?")
	}
	if out, err := buildSnippets(t, root, snips); err != nil {
		t.Fatalf("the documentation's Go snippets do not compile (%v):\n%s", err, out)
	}
}

// TestBrokenSnippetFails checks that the build fails on a snippet that
// does not compile, naming its Markdown file and line, and passes the same
// file once the snippet is fixed.
func TestBrokenSnippetFails(t *testing.T) {
	root := moduleRoot(t)
	md := "# Guide\n\n<!-- snippet: group g -->\n```go\ntype In struct{ N int }\n```\n\nThen:\n\n<!-- snippet: group g -->\n```go\nin := In{N: 1}\nfmt.Println(in.M)\n```\n"
	snips, err := Extract("docs/broken.md", md)
	if err != nil {
		t.Fatal(err)
	}
	out, err := buildSnippets(t, root, snips)
	if err == nil {
		t.Fatal("a snippet using an undefined field built")
	}
	if want := "docs/broken.md:13"; !strings.Contains(out, want) || !strings.Contains(out, "in.M undefined") {
		t.Fatalf("the build output does not name %s and the error:\n%s", want, out)
	}

	fixed := strings.Replace(md, "in.M", "in.N", 1)
	snips, err = Extract("docs/broken.md", fixed)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := buildSnippets(t, root, snips); err != nil {
		t.Fatalf("the fixed snippet does not build (%v):\n%s", err, out)
	}
}

// moduleRoot is the main module's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	return filepath.Dir(gomod)
}

// modulePath matches the module line of go.mod.
var modulePath = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// buildSnippets generates a package per group of snips and builds them all
// with one go build, the files placed inside the module by an overlay (so
// that nothing is written to the source tree). It returns the build's
// output, in which //line directives name the Markdown files and lines.
func buildSnippets(t *testing.T, root string, snips []Snippet) (string, error) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := modulePath.FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no module line")
	}
	module := string(m[1])

	imports, err := importable(root, module)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, genErr := Generate(snips, imports)

	tmp := t.TempDir()
	overlay := map[string]string{}
	// Building several packages, go build discards what it compiled;
	// only a single command would be written, and -o keeps it out of the
	// tree (with -o, go build would skip every package but commands).
	args := []string{"build", "-gcflags=-e"} // -e: every error, not the first ten
	if len(pkgs) == 1 && pkgs[0].Name == "main" {
		args = append(args, "-o", filepath.Join(tmp, "bin")+string(filepath.Separator))
	}
	if raceEnabled { // share the compiled dependencies of this test run
		args = append(args, "-race")
	}
	// The generated packages live under a directory of this package that
	// does not exist on disk.
	const genDir = "internal/docsnippets/generated"
	for _, p := range pkgs {
		for name, src := range p.Files {
			f := filepath.Join(tmp, p.Dir+"_"+name)
			if err := os.WriteFile(f, src, 0o600); err != nil {
				t.Fatal(err)
			}
			overlay[filepath.Join(root, genDir, p.Dir, name)] = f
		}
		args = append(args, module+"/"+genDir+"/"+p.Dir)
	}
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	ovFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args[:1], append([]string{"-overlay", ovFile}, args[1:]...)...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if genErr != nil {
		return genErr.Error() + "\n" + out.String(), errors.New("some snippets could not be turned into Go files")
	}
	return out.String(), err
}

// importable returns the packages a snippet may use without importing
// them: the module's packages that are neither commands nor internal, and
// the standard library's.
func importable(root, module string) (Imports, error) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...", "std")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	pkgs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, name, ok := strings.Cut(line, " ")
		if !ok || name == "main" || internal(path) {
			continue
		}
		pkgs[path] = name
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list found no packages")
	}
	return NewImports(pkgs, prefer), nil
}

// internal reports whether path is an internal or vendored package.
func internal(path string) bool {
	for _, el := range strings.Split(path, "/") {
		if el == "internal" || el == "vendor" {
			return true
		}
	}
	return false
}

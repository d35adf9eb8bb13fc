package layout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modulePath is the main module's import path.
const modulePath = "github.com/taskwire/taskwire"

// listedPackage is what go list says of one package.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// modulePackages returns the main module's packages relative to its root
// ("server", "store/sqlite") and, for each, its non-test imports of the
// module, also relative.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = moduleRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		var imports []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				imports = append(imports, rel)
			}
		}
		pkgs[strings.TrimPrefix(p.ImportPath, modulePath+"/")] = imports
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list listed %d packages; want the module's", len(pkgs))
	}
	return pkgs
}

// tableEntries returns the package names of the first column of the
// package table in the Markdown document r: every `code span` of that
// cell, in the rows of the table under "## Packages".
func tableEntries(r io.Reader) []string {
	var entries []string
	span := regexp.MustCompile("`([^`]+)`")
	in := false
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range span.FindAllStringSubmatch(cell, -1) {
			entries = append(entries, m[1])
		}
	}
	return entries
}

// covers reports whether table entry e names package pkg: e is pkg, or
// "x/..." with pkg x or under it.
func covers(e, pkg string) bool {
	if tree, ok := strings.CutSuffix(e, "/..."); ok {
		return pkg == tree || strings.HasPrefix(pkg, tree+"/")
	}
	return e == pkg
}

// testOnly reports whether pkg is an internal package that no package
// outside internal/ imports (in its non-test code): a test helper, which
// the table leaves out.
func testOnly(pkg string, pkgs map[string][]string) bool {
	if !strings.HasPrefix(pkg, "internal/") {
		return false
	}
	for p, imports := range pkgs {
		if !strings.HasPrefix(p, "internal/") && slices.Contains(imports, pkg) {
			return false
		}
	}
	return true
}

// TestPackageTable keeps the package table of docs/architecture.md in
// step with the module: every package is named (an internal one only
// tests import may be left out), and every name is a package of the
// module, a tree of them, or a nested module's directory.
func TestPackageTable(t *testing.T) {
	f, err := os.Open(filepath.Join(moduleRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := tableEntries(f)
	pkgs := modulePackages(t)
	var missing, stale []string
	for pkg := range pkgs {
		if !slices.ContainsFunc(entries, func(e string) bool { return covers(e, pkg) }) && !testOnly(pkg, pkgs) {
			missing = append(missing, pkg)
		}
	}
	for _, e := range entries {
		found := false
		for pkg := range pkgs {
			found = found || covers(e, pkg)
		}
		if tree, ok := strings.CutSuffix(e, "/..."); ok && !found {
			found = isModule(filepath.Join(moduleRoot, tree))
		}
		if !found {
			stale = append(stale, e)
		}
	}
	slices.Sort(missing)
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("packages missing from the table of docs/architecture.md (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string(nil), stale); diff != "" {
		t.Errorf("table entries of docs/architecture.md that name no package (-want +got):\n%s", diff)
	}
}

func TestTableEntries(t *testing.T) {
	doc := "# x\n| `a` | no |\n## Packages\n\n| package | status |\n|---|---|\n" +
		"| `mcp` | exists | `not this` |\n| `store/x`, `store/internal/...` | exists (`serve`) | y |\n## Next\n| `b` | no |\n"
	want := []string{"mcp", "store/x", "store/internal/..."}
	if diff := cmp.Diff(want, tableEntries(strings.NewReader(doc))); diff != "" {
		t.Errorf("tableEntries (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		e, pkg string
		want   bool
	}{
		{"store", "store", true},
		{"store", "store/sqlite", false},
		{"store/internal/...", "store/internal/taskdata", true},
		{"store/internal/...", "store/internals", false},
		{"conformance/...", "conformance", true},
	} {
		if got := covers(tc.e, tc.pkg); got != tc.want {
			t.Errorf("covers(%q, %q) = %v, want %v", tc.e, tc.pkg, got, tc.want)
		}
	}
}

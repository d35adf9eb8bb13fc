package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// moduleRoot is the main module's directory, relative to this package.
const moduleRoot = "../.."

// notLibrary are the top-level directories and paths whose code is not
// library code: commands, internal helpers, fixtures, benchmarks and
// examples.
var notLibrary = []string{"cmd", "internal", "bench", "examples", "conformance"}

// libraryFile reports whether rel, a slash-separated path relative to the
// module root, is a file of library code.
func libraryFile(rel string) bool {
	if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
		return false
	}
	dir := filepath.ToSlash(filepath.Dir(rel))
	for _, p := range notLibrary {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return false
		}
	}
	parts := strings.Split(dir, "/")
	return !slices.Contains(parts, "internal") && !slices.Contains(parts, "testdata") &&
		!strings.HasSuffix(parts[len(parts)-1], "test")
}

// pending are the functions, by package directory and name, that the
// reorganisation of package server splits; each must leave this list once
// it is short enough.
var pending = map[string]bool{}

// longFunc is a library function longer than the limit.
type longFunc struct {
	dir, file, name string
	lines           int
}

func (f longFunc) String() string { return fmt.Sprintf("%s/%s %s %d", f.dir, f.file, f.name, f.lines) }

// longFuncs returns every function of the library
// files under root longer than limit.
func longFuncs(t *testing.T, root string, limit int) []longFunc {
	t.Helper()
	fset := token.NewFileSet()
	var long []longFunc
	err := filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, file)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && isModule(file) || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !libraryFile(rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > limit {
				long = append(long, longFunc{path.Dir(rel), path.Base(rel), funcName(fd), n})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return long
}

// isModule reports whether dir holds a go.mod of its own (bench/): its
// code belongs to another module.
func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// funcName is fd's name, with its receiver type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestLibraryFunctionLength fails when a library function is longer than
// MaxFuncLines: split it into named steps.
func TestLibraryFunctionLength(t *testing.T) {
	var got []string
	seen := map[string]bool{}
	for _, f := range longFuncs(t, moduleRoot, MaxFuncLines) {
		if key := f.dir + " " + f.name; pending[key] {
			seen[key] = true
			continue
		}
		got = append(got, f.String())
	}
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("library functions longer than %d lines (-want +got):\n%s", MaxFuncLines, diff)
	}
	for key := range pending {
		if !seen[key] {
			t.Errorf("%s is no longer than %d lines: remove it from pending", key, MaxFuncLines)
		}
	}
}

func TestLibraryFile(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"server/server.go", true},
		{"store/sqlite/worker.go", true},
		{"server/server_test.go", false},
		{"cmd/taskwire/main.go", false},
		{"internal/jsonlimit/check.go", false},
		{"store/internal/taskdata/task.go", false},
		{"store/storetest/gauges.go", false},
		{"node/nodecmd/commands.go", true},
		{"node/node.go", true},
		{"conformance/fixture/tasks.go", false},
		{"examples/invoices/main.go", false},
		{"README.md", false},
	} {
		if got := libraryFile(tc.rel); got != tc.want {
			t.Errorf("libraryFile(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

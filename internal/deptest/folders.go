package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Package is what FolderCycles reads of one package of the module: its
// import path and its imports, test files excluded (go list's Imports).
type Package struct {
	ImportPath string
	Imports    []string
}

// ModulePackages lists the packages of the main module in dir (go list
// -json ./...) and returns the module path and the packages. It skips t
// when there is no go command and fails it when go list fails or its
// output does not decode.
func ModulePackages(t testing.TB, dir string) (module string, pkgs []Package) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-json=ImportPath,Imports,Module", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Package
			Module struct{ Path string }
		}
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if module == "" {
			module = p.Module.Path
		}
		pkgs = append(pkgs, p.Package)
	}
	if module == "" || len(pkgs) == 0 {
		t.Fatalf("go list in %s listed no packages of a module", dir)
	}
	return module, pkgs
}

// A Cycle is a loop of imports between top-level folders of a module.
type Cycle struct {
	// Folders are the folders in import order, the first one repeated at
	// the end: [task store task] means task imports store and store
	// imports task.
	Folders []string
	// Imports holds one package import for each step of Folders, as
	// "from -> to" with paths relative to the module.
	Imports []string
}

// String renders c on one line, as "task -> store -> task (task/memory ->
// store/gauges; store/sqlite -> task)".
func (c Cycle) String() string {
	return strings.Join(c.Folders, " -> ") + " (" + strings.Join(c.Imports, "; ") + ")"
}

// FolderCycles returns the import cycles between the top-level folders of
// module (a package's folder is the first element of its path below the
// module; the module's root package is folder "."). Imports within one
// folder and imports of other modules are ignored.
//
// Each import between two folders that lies on a cycle is reported on one
// shortest cycle through it; a cycle found through several of its imports
// is reported once, rotated to start at its smallest folder. The result is
// sorted and nil when the folders form no cycle.
func FolderCycles(module string, pkgs []Package) []Cycle {
	// witness[a][b] is the first package import (in sorted order) that
	// makes folder a import folder b.
	witness := map[string]map[string]string{}
	for _, p := range pkgs {
		from, ok := relPath(module, p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			to, ok := relPath(module, imp)
			if !ok {
				continue
			}
			a, b := folder(from), folder(to)
			if a == b {
				continue
			}
			if witness[a] == nil {
				witness[a] = map[string]string{}
			}
			w := from + " -> " + to
			if old, ok := witness[a][b]; !ok || w < old {
				witness[a][b] = w
			}
		}
	}
	seen := map[string]bool{}
	var cycles []Cycle
	for _, a := range slices.Sorted(maps.Keys(witness)) {
		for _, b := range slices.Sorted(maps.Keys(witness[a])) {
			path := shortestPath(witness, b, a)
			if path == nil {
				continue
			}
			c := makeCycle(witness, append([]string{a}, path...))
			if key := c.String(); !seen[key] {
				seen[key] = true
				cycles = append(cycles, c)
			}
		}
	}
	slices.SortFunc(cycles, func(x, y Cycle) int { return strings.Compare(x.String(), y.String()) })
	return cycles
}

// relPath returns path relative to module, and false for a path outside it.
func relPath(module, path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// folder returns the top-level folder of a path relative to the module.
func folder(rel string) string {
	f, _, _ := strings.Cut(rel, "/")
	return f
}

// shortestPath returns the folders of a shortest import path from one
// folder to another, both included, or nil when there is none. Ties go to
// the smaller folder name, so the result is deterministic.
func shortestPath(graph map[string]map[string]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		if f == to {
			var path []string
			for ; f != ""; f = prev[f] {
				path = append(path, f)
			}
			slices.Reverse(path)
			return path
		}
		for _, next := range slices.Sorted(maps.Keys(graph[f])) {
			if _, ok := prev[next]; !ok {
				prev[next] = f
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// makeCycle turns a closed walk (first folder repeated at the end) into a
// Cycle that starts at its smallest folder, with a witness per step.
func makeCycle(graph map[string]map[string]string, walk []string) Cycle {
	loop := walk[:len(walk)-1]
	start := slices.Index(loop, slices.Min(loop))
	loop = append(slices.Clone(loop[start:]), loop[:start]...)
	c := Cycle{Folders: append(loop, loop[0])}
	for i := range loop {
		c.Imports = append(c.Imports, graph[c.Folders[i]][c.Folders[i+1]])
	}
	return c
}

// FormatCycles renders cycles one per line, for a test failure.
func FormatCycles(cycles []Cycle) string {
	var b strings.Builder
	for _, c := range cycles {
		fmt.Fprintf(&b, "\t%s\n", c)
	}
	return b.String()
}

package deptest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNoFolderCycles checks that the top-level folders of the main module
// import each other without a loop, so that the layout can be read as
// layers (mcp at the bottom, then task, backend, the stores, the runtime
// and server, the integrations and commands on top).
//
// Only the imports of non-test files count: a test binary is imported by
// nothing, so its imports cannot tangle the libraries, and counting them
// would tie the folder of every end-to-end test to every folder it drives.
func TestNoFolderCycles(t *testing.T) {
	module, pkgs := ModulePackages(t, "../..")
	if len(pkgs) < 20 {
		t.Fatalf("go list listed %d packages; want the whole module", len(pkgs))
	}
	if cycles := FolderCycles(module, pkgs); len(cycles) > 0 {
		t.Errorf("%d import cycles between top-level folders (folder path, then one package import per step):\n%s",
			len(cycles), FormatCycles(cycles))
	}
}

func TestFolderCycles(t *testing.T) {
	const m = "example.com/m"
	tests := []struct {
		name string
		pkgs []Package
		want []Cycle
	}{
		{
			name: "layers",
			pkgs: []Package{
				{ImportPath: m + "/a", Imports: []string{"fmt", m + "/b/x"}},
				{ImportPath: m + "/b/x", Imports: []string{m + "/b/y", m + "/c"}},
				{ImportPath: m + "/b/y", Imports: []string{m + "/b/x", "other.org/a"}},
				{ImportPath: m + "/c"},
			},
		},
		{
			name: "two folders",
			pkgs: []Package{
				{ImportPath: m + "/task", Imports: []string{m + "/internal/jsonlimit"}},
				{ImportPath: m + "/task/memory", Imports: []string{m + "/store/gauges"}},
				{ImportPath: m + "/internal/listcursor", Imports: []string{m + "/task"}},
				{ImportPath: m + "/internal/jsonlimit"},
				{ImportPath: m + "/store/gauges", Imports: []string{m + "/task"}},
			},
			want: []Cycle{
				{Folders: []string{"internal", "task", "internal"},
					Imports: []string{"internal/listcursor -> task", "task -> internal/jsonlimit"}},
				{Folders: []string{"store", "task", "store"},
					Imports: []string{"store/gauges -> task", "task/memory -> store/gauges"}},
			},
		},
		{
			name: "three folders, found through each import once",
			pkgs: []Package{
				{ImportPath: m + "/a", Imports: []string{m + "/b"}},
				{ImportPath: m + "/b", Imports: []string{m + "/c/z"}},
				{ImportPath: m + "/c/z", Imports: []string{m + "/a"}},
			},
			want: []Cycle{
				{Folders: []string{"a", "b", "c", "a"}, Imports: []string{"a -> b", "b -> c/z", "c/z -> a"}},
			},
		},
		{
			name: "the smallest import witnesses a step, the root package is folder .",
			pkgs: []Package{
				{ImportPath: m, Imports: []string{m + "/a/y", m + "/a/x"}},
				{ImportPath: m + "/a/y", Imports: []string{m}},
			},
			want: []Cycle{
				{Folders: []string{".", "a", "."}, Imports: []string{". -> a/x", "a/y -> ."}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FolderCycles(m, tt.pkgs)); diff != "" {
				t.Errorf("FolderCycles (-want +got):\n%s", diff)
			}
		})
	}
}

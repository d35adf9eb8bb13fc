package migrations

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestLoad(t *testing.T) {
	good := fstest.MapFS{
		"m/002_more.sql":    {Data: []byte("B")},
		"m/001_initial.sql": {Data: []byte("A")},
	}
	got, err := Load(good, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{{1, "initial", "A"}, {2, "more", "B"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":      {"m/001_a.sql": {}, "m/003_c.sql": {}},
		"bad name": {"m/first.sql": {}},
		"zero":     {"m/000_a.sql": {}},
		"not sql":  {"m/001_a.txt": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load succeeded", name)
		}
	}
}

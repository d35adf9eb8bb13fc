// Package migrations loads the embedded, versioned schema migrations the
// stores apply: files named NNN_name.sql, numbered 1, 2, 3, ... without gaps.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the migrations in dir of fsys in version order. It fails on a
// badly named file or a gap in the numbering.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("bad migration file name %q", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations are not numbered 1..n without gaps (at %d)", m.Version)
		}
	}
	return ms, nil
}

// MustCount returns the number of migrations in dir; the files are fixed at
// build time, so an error is a programming error and panics.
func MustCount(fsys fs.FS, dir string) int {
	ms, err := Load(fsys, dir)
	if err != nil {
		panic(err)
	}
	return len(ms)
}

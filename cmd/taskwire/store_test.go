package main

import (
	"path/filepath"
	"testing"

	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/store"
)

func TestDefaultReportsDir(t *testing.T) {
	tests := []struct {
		spec store.Spec
		want string
	}{
		{store.Spec{Kind: store.SQLite, Path: "taskwire.db"}, "reports"},
		{store.Spec{Kind: store.SQLite, Path: "/var/lib/tw/tasks.db"}, filepath.FromSlash("/var/lib/tw/reports")},
		{store.Spec{Kind: store.SQLite, Path: ":memory:"}, "reports"},
		{store.Spec{Kind: store.Postgres, URL: "postgres://db/x"}, "reports"},
	}
	for _, tt := range tests {
		if got := defaultReportsDir(node.StoreSpec{Spec: tt.spec}); got != tt.want {
			t.Errorf("%v: reports dir %q, want %q", tt.spec, got, tt.want)
		}
	}
}

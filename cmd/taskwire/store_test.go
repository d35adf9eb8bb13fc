package main

import (
	"path/filepath"
	"testing"

	"github.com/taskwire/taskwire/store"
)

func TestResolveStore(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == storeEnv {
				return v
			}
			return ""
		}
	}
	tests := []struct{ flag, env, want string }{
		{"", "", defaultStore},
		{"", "sqlite:/data/env.db", "sqlite:/data/env.db"},
		{"sqlite:flag.db", "sqlite:/data/env.db", "sqlite:flag.db"},
	}
	for _, tt := range tests {
		if got := resolveStore(tt.flag, env(tt.env)); got != tt.want {
			t.Errorf("resolveStore(%q, env %q) = %q, want %q", tt.flag, tt.env, got, tt.want)
		}
	}
	// The default is a file in the working directory.
	s, err := store.ParseSpec(defaultStore)
	if err != nil || s.Kind != store.SQLite || s.Path != "taskwire.db" {
		t.Errorf("default store = %+v, %v", s, err)
	}
}

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
		if got := (storeSpec{Spec: tt.spec}).defaultReportsDir(); got != tt.want {
			t.Errorf("%v: reports dir %q, want %q", tt.spec, got, tt.want)
		}
	}
}

func TestSchemaFlagOnlyForPostgres(t *testing.T) {
	s := storeSpec{Spec: store.Spec{Kind: store.SQLite, Path: "x.db"}}
	if err := s.withSchema("x"); err == nil {
		t.Error("--schema accepted for SQLite")
	}
	p := storeSpec{Spec: store.Spec{Kind: store.Postgres, URL: "postgres://db/x"}}
	if err := p.withSchema("tw"); err != nil || p.Schema != "tw" {
		t.Errorf("withSchema: %v, %q", err, p.Schema)
	}
}

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseStoreSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    storeSpec
		wantErr string // substring; empty: no error
	}{
		{in: "sqlite:taskwire.db", want: storeSpec{Backend: backendSQLite, Path: "taskwire.db"}},
		{in: "sqlite:/var/lib/taskwire/tasks.db", want: storeSpec{Backend: backendSQLite, Path: "/var/lib/taskwire/tasks.db"}},
		{in: "sqlite:///var/lib/tasks.db", want: storeSpec{Backend: backendSQLite, Path: "/var/lib/tasks.db"}},
		{in: "sqlite://rel/tasks.db", want: storeSpec{Backend: backendSQLite, Path: "rel/tasks.db"}},
		{in: "SQLite:data/x", want: storeSpec{Backend: backendSQLite, Path: "data/x"}},
		{in: "sqlite::memory:", want: storeSpec{Backend: backendSQLite, Path: ":memory:"}},
		{in: "  sqlite:spaced.db  ", want: storeSpec{Backend: backendSQLite, Path: "spaced.db"}},
		{in: "tasks.db", want: storeSpec{Backend: backendSQLite, Path: "tasks.db"}},
		{in: "./data/tasks.DB", want: storeSpec{Backend: backendSQLite, Path: "./data/tasks.DB"}},
		{in: "/tmp/x.sqlite3", want: storeSpec{Backend: backendSQLite, Path: "/tmp/x.sqlite3"}},
		{in: "postgres://app@db:5432/tasks", want: storeSpec{Backend: backendPostgres, URL: "postgres://app@db:5432/tasks"}},
		{in: "postgresql://app:pw@db/tasks?sslmode=require", want: storeSpec{Backend: backendPostgres, URL: "postgresql://app:pw@db/tasks?sslmode=require"}},
		{in: "postgres:///tasks?host=/run/postgresql", want: storeSpec{Backend: backendPostgres, URL: "postgres:///tasks?host=/run/postgresql"}},

		{in: "", wantErr: "empty store"},
		{in: "   ", wantErr: "empty store"},
		{in: "sqlite:", wantErr: "needs a file"},
		{in: "sqlite://", wantErr: "needs a file"},
		{in: "tasks", wantErr: "not recognised"},
		{in: "tasks.txt", wantErr: "not recognised"},
		{in: "mysql://root:hunter2@db/x", wantErr: "unsupported scheme"},
		{in: "postgres://app:hunter2@db:bad port/x", wantErr: "not a valid URL"},
	}
	for _, tt := range tests {
		got, err := parseStoreSpec(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseStoreSpec(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("parseStoreSpec(%q): error shows the password: %v", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseStoreSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestStoreSpecStringRedacts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sqlite:taskwire.db", "sqlite:taskwire.db"},
		{"x.db", "sqlite:x.db"},
		{"postgres://app@db/tasks", "postgres://app@db/tasks"},
		{"postgres://app:hunter2@db:5432/tasks", "postgres://app:xxxxx@db:5432/tasks"},
		{"postgresql://app:hunter2@db/tasks?password=hunter2&sslmode=disable", "postgresql://app:xxxxx@db/tasks?password=xxxxx&sslmode=disable"},
		{"postgres://db/tasks?PASSWORD=hunter2", "postgres://db/tasks?PASSWORD=xxxxx"},
	}
	for _, tt := range tests {
		s, err := parseStoreSpec(tt.in)
		if err != nil {
			t.Fatalf("parseStoreSpec(%q): %v", tt.in, err)
		}
		if got := s.String(); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := redactURL("postgres://app:hunter2@db:bad port/x"); strings.Contains(got, "hunter2") {
		t.Errorf("redactURL of an unparseable URL = %q", got)
	}
}

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
	s, err := parseStoreSpec(defaultStore)
	if err != nil || s.Backend != backendSQLite || s.Path != "taskwire.db" {
		t.Errorf("default store = %+v, %v", s, err)
	}
}

func TestDefaultReportsDir(t *testing.T) {
	tests := []struct {
		spec storeSpec
		want string
	}{
		{storeSpec{Backend: backendSQLite, Path: "taskwire.db"}, "reports"},
		{storeSpec{Backend: backendSQLite, Path: "/var/lib/tw/tasks.db"}, filepath.FromSlash("/var/lib/tw/reports")},
		{storeSpec{Backend: backendSQLite, Path: ":memory:"}, "reports"},
		{storeSpec{Backend: backendPostgres, URL: "postgres://db/x"}, "reports"},
	}
	for _, tt := range tests {
		if got := tt.spec.defaultReportsDir(); got != tt.want {
			t.Errorf("%v: reports dir %q, want %q", tt.spec, got, tt.want)
		}
	}
}

package store_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/store"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    store.Spec
		wantErr string // substring; empty: no error
	}{
		{in: "sqlite:taskwire.db", want: store.Spec{Kind: store.SQLite, Path: "taskwire.db"}},
		{in: "sqlite:/var/lib/taskwire/tasks.db", want: store.Spec{Kind: store.SQLite, Path: "/var/lib/taskwire/tasks.db"}},
		{in: "sqlite:///var/lib/tasks.db", want: store.Spec{Kind: store.SQLite, Path: "/var/lib/tasks.db"}},
		{in: "sqlite://rel/tasks.db", want: store.Spec{Kind: store.SQLite, Path: "rel/tasks.db"}},
		{in: "SQLite:data/x", want: store.Spec{Kind: store.SQLite, Path: "data/x"}},
		{in: "sqlite::memory:", want: store.Spec{Kind: store.SQLite, Path: ":memory:"}},
		{in: "  sqlite:spaced.db  ", want: store.Spec{Kind: store.SQLite, Path: "spaced.db"}},
		{in: "tasks.db", want: store.Spec{Kind: store.SQLite, Path: "tasks.db"}},
		{in: "./data/tasks.DB", want: store.Spec{Kind: store.SQLite, Path: "./data/tasks.DB"}},
		{in: "/tmp/x.sqlite3", want: store.Spec{Kind: store.SQLite, Path: "/tmp/x.sqlite3"}},
		{in: "postgres://app@db:5432/tasks", want: store.Spec{Kind: store.Postgres, URL: "postgres://app@db:5432/tasks"}},
		{in: "postgresql://app:pw@db/tasks?sslmode=require", want: store.Spec{Kind: store.Postgres, URL: "postgresql://app:pw@db/tasks?sslmode=require"}},
		{in: "postgres:///tasks?host=/run/postgresql", want: store.Spec{Kind: store.Postgres, URL: "postgres:///tasks?host=/run/postgresql"}},
		{in: "postgres://app@db/?dbname=tasks", want: store.Spec{Kind: store.Postgres, URL: "postgres://app@db/?dbname=tasks"}},
		{in: "memory:", want: store.Spec{Kind: store.Memory}},
		{in: " Memory: ", want: store.Spec{Kind: store.Memory}},

		{in: "", wantErr: "empty store"},
		{in: "   ", wantErr: "empty store"},
		{in: "sqlite:", wantErr: "needs a file"},
		{in: "sqlite://", wantErr: "needs a file"},
		{in: "memory:x", wantErr: "memory: takes nothing after the colon"},
		{in: "memory://", wantErr: "memory: takes nothing after the colon"},
		{in: "memory", wantErr: "or memory:"},
		{in: "tasks", wantErr: "not recognised"},
		{in: "tasks.txt", wantErr: "not recognised"},
		{in: "mysql://root:hunter2@db/x", wantErr: "unsupported scheme"},
		{in: "postgres://app:hunter2@db:bad port/x", wantErr: "not a valid URL"},
		// No database: PostgreSQL would pick the user's, silently.
		{in: "postgres://", wantErr: "names no database"},
		{in: "postgres://app:hunter2@db:5432", wantErr: "names no database"},
		{in: "postgresql://app@db/", wantErr: "names no database"},
	}
	for _, tt := range tests {
		got, err := store.ParseSpec(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSpec(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("ParseSpec(%q): error shows the password: %v", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseSpec(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSpecStringRedacts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sqlite:taskwire.db", "sqlite:taskwire.db"},
		{"x.db", "sqlite:x.db"},
		{"MEMORY:", "memory:"},
		{"postgres://app@db/tasks", "postgres://app@db/tasks"},
		{"postgres://app:hunter2@db:5432/tasks", "postgres://app:xxxxx@db:5432/tasks"},
		{"postgresql://app:hunter2@db/tasks?password=hunter2&sslmode=disable", "postgresql://app:xxxxx@db/tasks?password=xxxxx&sslmode=disable"},
		{"postgres://db/tasks?PASSWORD=hunter2", "postgres://db/tasks?PASSWORD=xxxxx"},
	}
	for _, tt := range tests {
		s, err := store.ParseSpec(tt.in)
		if err != nil {
			t.Fatalf("ParseSpec(%q): %v", tt.in, err)
		}
		if got := s.String(); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := store.RedactURL("postgres://app:hunter2@db:bad port/x"); strings.Contains(got, "hunter2") {
		t.Errorf("RedactURL of an unparseable URL = %q", got)
	}
}

// TestSpecDescribe checks the start-up description: host, port, database,
// user and schema of PostgreSQL, never the password.
func TestSpecDescribe(t *testing.T) {
	tests := []struct{ spec, schema, want string }{
		{"sqlite:/data/tasks.db", "", "SQLite file /data/tasks.db, tasks survive restarts"},
		{"sqlite::memory:", "", "SQLite in memory, tasks are lost when the process stops"},
		{"memory:", "", "in-memory store, tasks are lost when the process stops"},
		{"postgres://app:hunter2@db.internal:6543/tasks", "", "PostgreSQL host db.internal port 6543 database tasks user app schema taskwire"},
		{"postgres://app@db/tasks?password=hunter2", "tw2", "PostgreSQL host db port 5432 database tasks user app schema tw2"},
	}
	for _, tt := range tests {
		s, err := store.ParseSpec(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Describe(tt.schema)
		if got != tt.want {
			t.Errorf("Describe(%q, %q) = %q, want %q", tt.spec, tt.schema, got, tt.want)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("Describe shows the password: %q", got)
		}
	}
}

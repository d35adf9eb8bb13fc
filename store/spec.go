package store

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
)

// Kind names a store backend.
type Kind string

// The backends a Spec can name.
const (
	// SQLite is store/sqlite: one database file.
	SQLite Kind = "sqlite"
	// Postgres is store/postgres: one schema of a PostgreSQL database.
	Postgres Kind = "postgres"
	// Memory is store/memory: a bounded store inside the process, for
	// development and tests. Nothing survives the process and nodes
	// cannot share it.
	Memory Kind = "memory"
)

// Spec is a parsed store spec; build it with ParseSpec.
type Spec struct {
	// Kind is SQLite, Postgres or Memory.
	Kind Kind
	// Path is the SQLite database file (or sqlite.MemoryPath).
	Path string
	// URL is the PostgreSQL connection URL, password included: never
	// print it; String and Describe leave the password out.
	URL string
}

// ParseSpec parses a store spec:
//
//	sqlite:PATH                  a SQLite file (sqlite:///abs/path also works)
//	PATH.db, .sqlite, .sqlite3   the same, without the prefix
//	postgres://… postgresql://…  a PostgreSQL connection URL naming a database
//	memory:                      the in-memory store of store/memory
//
// memory: is not sqlite::memory: (SQLite's private in-memory database):
// both lose every task when the process stops, but memory: is the
// bounded development store that starts no database at all.
// A PostgreSQL URL must name its database (in the path or as dbname=):
// PostgreSQL's own fallback, a database named after the user, would
// silently put the store's tables somewhere unexpected. Anything else is an
// error that says what is accepted; errors never echo a password.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	switch {
	case s == "":
		return Spec{}, errors.New("empty store: use sqlite:PATH, postgres://USER@HOST/DB or memory:")
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		u, err := url.Parse(s)
		if err != nil {
			return Spec{}, fmt.Errorf("store %s: not a valid URL", RedactURL(s))
		}
		if strings.Trim(u.Path, "/") == "" && u.Query().Get("dbname") == "" {
			return Spec{}, fmt.Errorf("store %s names no database: add one, as in postgres://USER@HOST/DB "+
				"(PostgreSQL would otherwise use the database named after the user)", RedactURL(s))
		}
		return Spec{Kind: Postgres, URL: s}, nil
	case strings.HasPrefix(lower, "memory:"):
		if rest := s[len("memory:"):]; rest != "" {
			return Spec{}, fmt.Errorf("store %q: memory: takes nothing after the colon", s)
		}
		return Spec{Kind: Memory}, nil
	case strings.HasPrefix(lower, "sqlite:"):
		p := s[len("sqlite:"):]
		// sqlite://relative and sqlite:///absolute, as in many URL-style
		// database settings.
		p = strings.TrimPrefix(p, "//")
		if p == "" {
			return Spec{}, errors.New("store sqlite: needs a file, as in sqlite:taskwire.db")
		}
		return Spec{Kind: SQLite, Path: p}, nil
	case strings.Contains(s, "://"):
		return Spec{}, fmt.Errorf("store %s: unsupported scheme; use sqlite:PATH, postgres://USER@HOST/DB or memory:", RedactURL(s))
	}
	switch strings.ToLower(filepath.Ext(s)) {
	case ".db", ".sqlite", ".sqlite3":
		return Spec{Kind: SQLite, Path: s}, nil
	}
	return Spec{}, fmt.Errorf("store %q: not recognised; use sqlite:PATH (or a path ending in .db), postgres://USER@HOST/DB or memory:", s)
}

// String returns the spec for display: sqlite:PATH, memory:, or the
// PostgreSQL URL with its password replaced.
func (s Spec) String() string {
	switch s.Kind {
	case Postgres:
		return RedactURL(s.URL)
	case Memory:
		return "memory:"
	}
	return "sqlite:" + s.Path
}

// Describe names what the spec resolves to, for a startup line: the SQLite
// file, the in-memory store, or the PostgreSQL host, port, database, user and schema (schema
// empty: postgres.DefaultSchema) after the PG* environment variables are
// applied. It never shows a password and does not touch the network.
func (s Spec) Describe(schema string) string {
	switch s.Kind {
	case SQLite:
		if s.Path == sqlite.MemoryPath {
			return "SQLite in memory, tasks are lost when the process stops"
		}
		return "SQLite file " + s.Path + ", tasks survive restarts"
	case Memory:
		return "in-memory store, tasks are lost when the process stops"
	case Postgres:
		if schema == "" {
			schema = postgres.DefaultSchema
		}
		cfg, err := pgconn.ParseConfig(s.URL)
		if err != nil {
			return "PostgreSQL " + RedactURL(s.URL) + " schema " + schema
		}
		return "PostgreSQL host " + cfg.Host + " port " + strconv.Itoa(int(cfg.Port)) + " database " + cfg.Database +
			" user " + cfg.User + " schema " + schema
	}
	return string(s.Kind)
}

// RedactURL returns a connection URL fit for printing: the password of the
// user information, and a password query parameter, replaced by "xxxxx". A
// value that does not parse is not printed at all.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		scheme, _, _ := strings.Cut(raw, "://")
		return scheme + "://(redacted)"
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/internal/pgtest"
)

// sharedPostgres returns the URL of the shared test database, skipping the
// test (failing it under CI=true) when it does not answer.
func sharedPostgres(t *testing.T) string { return pgtest.URL(t) }

func pingPostgres(u string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// newSchema returns a fresh schema name, dropped with everything in it when
// the test ends. Call it before starting the nodes that use it, so that
// they are killed before the schema is dropped.
func newSchema(t *testing.T, pgURL string) string { return pgtest.Schema(t, pgURL, "e2e_") }

// jobRow is the job of a task as the store keeps it.
type jobRow struct {
	State   string
	Attempt int64
	Owner   string
}

// readJob reads the job row of a task directly from the store's schema.
func readJob(t *testing.T, pgURL, schema, taskID string) jobRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatalf("reading job: %v", err)
	}
	defer conn.Close(context.Background())
	var j jobRow
	var owner *string
	err = conn.QueryRow(ctx, "SELECT state, attempt, lease_owner FROM "+pgx.Identifier{schema, "jobs"}.Sanitize()+" WHERE task_id = $1", taskID).
		Scan(&j.State, &j.Attempt, &owner)
	if err != nil {
		t.Fatalf("reading job of %s: %v", taskID, err)
	}
	if owner != nil {
		j.Owner = *owner
	}
	return j
}

// pgServer is a private PostgreSQL server run by one test, which may stop
// and start it at will without disturbing other tests.
type pgServer struct {
	t      *testing.T
	bindir string
	dir    string // owned by the server's OS user
	data   string
	port   int
	cred   *syscall.Credential // the postgres OS user, when running as root
	log    *syncBuffer

	cmd  *exec.Cmd
	done chan struct{}
}

// startPrivatePostgres initializes a cluster in a temporary directory and
// starts it on a free loopback port. It is stopped and removed when the
// test ends.
func startPrivatePostgres(t *testing.T) *pgServer {
	t.Helper()
	bindir := postgresBindir()
	if bindir == "" {
		requireOrSkip(t, "no PostgreSQL server binaries (initdb, postgres) found; set TASKWIRE_TEST_PG_BINDIR")
	}
	s := &pgServer{t: t, bindir: bindir, log: &syncBuffer{}}
	dir, err := os.MkdirTemp(pgTempBase(), "taskwire-e2e-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir, s.data = dir, filepath.Join(dir, "data")
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			requireOrSkip(t, "running as root without a postgres OS user to run a private PostgreSQL server: %v", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	initdb := s.command("initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--no-locale", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	t.Cleanup(s.cleanup)
	for try := 1; ; try++ { // another process may take the free port first
		s.port = freePort(t)
		if s.start(try < 3) {
			break
		}
		t.Logf("private PostgreSQL could not start on port %d; trying another", s.port)
	}
	t.Logf("private PostgreSQL on port %d ready in %v", s.port, time.Since(began).Round(time.Millisecond))
	return s
}

// postgresBindir finds the directory of initdb and postgres.
func postgresBindir() string {
	if d := os.Getenv("TASKWIRE_TEST_PG_BINDIR"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgMajor(b) - pgMajor(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

func pgMajor(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

func (s *pgServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bindir, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = childAttr()
	cmd.SysProcAttr.Credential = s.cred
	// Backends inherit the output pipes; do not wait long for the last of
	// them once the postmaster is gone.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// URL is the connection URL of the server's postgres database.
func (s *pgServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// start starts the server and waits until it accepts connections. When
// the server exits at once and mayFail is set, it returns false.
func (s *pgServer) start(mayFail bool) bool {
	s.t.Helper()
	s.cmd = s.command("postgres", "-D", s.data,
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(s.port),
		"-c", "unix_socket_directories=", "-c", "max_connections=60",
		"-c", "shared_buffers=32MB", "-c", "fsync=off", "-c", "full_page_writes=off")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting postgres: %v", err)
	}
	done := make(chan struct{})
	s.done = done
	cmd := s.cmd
	go func() {
		cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := pingPostgres(s.URL(), 2*time.Second)
		if err == nil {
			return true
		}
		select {
		case <-done:
			if mayFail {
				return false
			}
			s.t.Fatalf("postgres exited at start: %v\n%s", cmd.ProcessState, s.log)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("postgres not ready after 30s: %v\n%s", err, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts the server down in fast mode (SIGINT: sessions are
// terminated, a checkpoint is written), as pg_ctl stop and pg_ctlcluster
// restart do by default, and waits for it to exit.
func (s *pgServer) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		s.t.Fatalf("postgres did not stop within 30s\n%s", s.log)
	}
}

// running reports whether the server process is up.
func (s *pgServer) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// cleanup stops the server at the end of the test, immediately.
func (s *pgServer) cleanup() {
	if s.done == nil {
		return // never started
	}
	if s.running() {
		s.cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	if s.t.Failed() {
		s.t.Logf("private PostgreSQL log:\n%s", tail(s.log.String(), 4000))
	}
}

// pgTempBase is where the private server's directory goes: the temporary
// directory, unless the server's OS user could not reach it (a TMPDIR under
// root's home, say), then /tmp.
func pgTempBase() string {
	base := os.TempDir()
	if os.Geteuid() != 0 {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

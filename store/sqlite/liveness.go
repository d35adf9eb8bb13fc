package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/taskwire/taskwire/backend"
)

// HoldInstance implements backend.LivenessRescuer. The hold is an
// exclusive flock on a lock file named by a random instance ID in the
// directory Path + ".instances" next to the database file, which holds the
// host name: when the process dies, the kernel drops the lock. A rescuer
// that can take the lock of a running job's instance knows its owner is
// dead and takes its jobs at once, which a node that restarts does at its
// first pass.
//
// Doubt waits for the lease: only the lock files of this host (by name)
// are probed, since locks on a network filesystem may not be seen across
// hosts; a missing, unreadable or foreign lock file, or one another
// process holds, leaves its jobs to RescueExpired. The lock is taken
// before the file names its host, so a file caught half made is foreign.
// A MemoryPath database, and systems without flock, have no holds
// (backend.ErrLivenessUnsupported).
func (j jobStore) HoldInstance(ctx context.Context) (backend.InstanceHold, error) {
	s := j.s
	if s.opts.Path == MemoryPath || !flockSupported {
		return nil, backend.ErrLivenessUnsupported
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return nil, fmt.Errorf("sqlite: hold instance: no host name: %w", backend.ErrLivenessUnsupported)
	}
	dir := s.opts.Path + ".instances"
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("sqlite: hold instance: %w", err)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("sqlite: hold instance: %w", err)
	}
	h := &instanceHold{s: s, dir: dir, host: host, id: hex.EncodeToString(b[:])}
	f, err := os.OpenFile(h.path(h.id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: hold instance: %w", err)
	}
	if ok, err := tryLock(f); err != nil || !ok {
		f.Close()
		os.Remove(f.Name())
		if err == nil {
			err = errors.New("the new lock file is locked")
		}
		return nil, fmt.Errorf("sqlite: hold instance: %w", err)
	}
	if _, err := f.WriteString(host); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("sqlite: hold instance: %w", err)
	}
	h.file = f
	h.sweep(ctx)
	return h, nil
}

// instanceHold is a sqlite backend.InstanceHold.
type instanceHold struct {
	s             *Store
	dir, host, id string
	mu            sync.Mutex // serialises RescueDead and Close
	file          *os.File   // holds the lock; nil once closed
}

// path is the lock file of instance id.
func (h *instanceHold) path(id string) string { return filepath.Join(h.dir, id+".lock") }

// ID implements backend.InstanceHold.
func (h *instanceHold) ID() string { return h.id }

// validID reports whether id is an instance ID as HoldInstance makes them,
// so that a value read from the database never names another file.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// probe reports whether instance id is known dead: its lock file is this
// host's (unless anyHost) and its lock could be taken. A dead instance's
// file is returned locked; the caller closes it.
func (h *instanceHold) probe(id string, anyHost bool) *os.File {
	if id == h.id || !validID(id) {
		return nil
	}
	f, err := os.OpenFile(h.path(id), os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	if ok, err := tryLock(f); err != nil || !ok {
		f.Close()
		return nil
	}
	b := make([]byte, len(h.host)+1)
	n, _ := f.ReadAt(b, 0)
	if !anyHost && string(b[:n]) != h.host {
		f.Close() // another host's, or half made: wait for the lease
		return nil
	}
	return f
}

// runningInstances lists the instances of running jobs.
func (h *instanceHold) runningInstances(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := h.s.bound(ctx)
	defer cancel()
	rows, err := h.s.r.QueryContext(ctx, `SELECT DISTINCT lease_instance FROM jobs
		WHERE state = 'running' AND lease_instance IS NOT NULL`)
	if err != nil {
		return nil, wrapErr("rescue dead: list", err)
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrapErr("rescue dead: list", err)
		}
		ids[id] = true
	}
	return ids, wrapErr("rescue dead: list", rows.Err())
}

// RescueDead implements backend.InstanceHold: it takes the running jobs of
// the instances that probe finds dead, in one pass, and then removes the
// lock files of those left with no running job.
func (h *instanceHold) RescueDead(ctx context.Context, p backend.RescueParams) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.file == nil {
		return 0, errors.New("sqlite: instance hold closed")
	}
	if p.Limit < 1 {
		return 0, nil
	}
	running, err := h.runningInstances(ctx)
	if err != nil {
		return 0, err
	}
	var dead []string
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for id := range running {
		if f := h.probe(id, false); f != nil {
			dead, files = append(dead, id), append(files, f)
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	list, _ := json.Marshal(dead)
	now := p.Now
	if now.IsZero() {
		now = h.s.now()
	}
	n, err := h.s.rescue(ctx, p, now, `SELECT task_id, attempt, interrupted_runs FROM jobs
			WHERE state = 'running' AND lease_instance IN (SELECT value FROM json_each(?))
			ORDER BY lease_expires_at, task_id LIMIT ?`, string(list))
	if err != nil {
		return 0, err
	}
	if left, err := h.runningInstances(ctx); err == nil {
		for i, id := range dead {
			if !left[id] {
				os.Remove(files[i].Name()) // still locked: no prober takes it for live
			}
		}
	}
	return n, nil
}

// sweep removes the lock files it can lock that name no running job:
// those of dead instances whose jobs a lease expiry rescued, and those a
// crash left before their owner locked them. The directory then holds
// about one file per live instance. A file swept that a starting instance
// had just made (before locking it) only costs that instance the fast
// path: its jobs would wait for their leases.
func (h *instanceHold) sweep(ctx context.Context) {
	running, err := h.runningInstances(ctx)
	if err != nil {
		return
	}
	entries, err := os.ReadDir(h.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || running[id] {
			continue
		}
		if f := h.probe(id, true); f != nil {
			os.Remove(f.Name())
			f.Close()
		}
	}
}

// Close implements backend.InstanceHold: it drops the lock. The lock file
// stays for the rescuers, which remove it once they have taken the
// instance's running jobs, or find it has none.
func (h *instanceHold) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.file == nil {
		return nil
	}
	err := h.file.Close()
	h.file = nil
	if err != nil {
		return fmt.Errorf("sqlite: release instance: %w", err)
	}
	return nil
}

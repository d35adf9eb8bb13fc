// Package memory is an in-process session.Store for a single node: fast,
// bounded, and gone when the process ends. A fleet, or a node whose 2025-era
// clients must keep their sessions across restarts, uses a durable store
// (store/sqlite, store/postgres) instead.
package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/taskwire/taskwire/session"
)

// Options configure a Store.
type Options struct {
	// MaxSessions bounds the records held, live or expired. When it is
	// reached Create first removes expired records and, if none were,
	// fails with session.ErrFull. Zero means 10,000.
	MaxSessions int
}

// Store is an in-process session.Store. Its methods are safe for concurrent
// use and never block on anything but a mutex; ctx is only checked for
// cancellation.
type Store struct {
	max int

	mu      sync.Mutex
	records map[string]session.Record
	owners  map[owner]int // records per owner, live or expired
}

type owner struct{ endpoint, tenant, principal string }

func ownerOf(r *session.Record) owner { return owner{r.Endpoint, r.Tenant, r.Principal} }

// New returns an empty Store. It fails on a negative MaxSessions.
func New(opts Options) (*Store, error) {
	if opts.MaxSessions < 0 {
		return nil, fmt.Errorf("memory: MaxSessions must not be negative, got %d", opts.MaxSessions)
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = 10_000
	}
	return &Store{max: opts.MaxSessions, records: map[string]session.Record{}, owners: map[owner]int{}}, nil
}

var _ session.Store = (*Store)(nil)

// Create implements session.Store.
func (s *Store) Create(ctx context.Context, r session.Record, limits session.Limits, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(r.Key) != session.KeyLength {
		return fmt.Errorf("memory: session key must be %d characters, got %d", session.KeyLength, len(r.Key))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[r.Key]; ok {
		return fmt.Errorf("memory: session key already exists")
	}
	o := ownerOf(&r)
	if maxPerOwner := limits.PerOwner; maxPerOwner > 0 && s.owners[o] >= maxPerOwner && s.liveOf(o, now) >= maxPerOwner {
		return session.ErrLimit
	}
	if len(s.records) >= s.max && s.sweepLocked(now, len(s.records)) == 0 {
		return session.ErrFull
	}
	// Records held are live or expired: only when they reach Total are
	// the expired ones removed to count the live.
	if limits.Total > 0 && len(s.records) >= limits.Total {
		if s.sweepLocked(now, len(s.records)); len(s.records) >= limits.Total {
			return session.ErrFull
		}
	}
	r.ClientCapabilities = clone(r.ClientCapabilities)
	r.ClientInfo = clone(r.ClientInfo)
	s.records[r.Key] = r
	s.owners[o]++
	return nil
}

// liveOf counts o's live records. It scans the whole map, but only runs
// when o's record count (live or expired) has reached the limit.
func (s *Store) liveOf(o owner, now time.Time) int {
	return s.countLiveLocked(now, func(r *session.Record) bool { return ownerOf(r) == o })
}

// CountLive returns how many records are live at now (session.Record.Live):
// expired records that no sweep has removed yet are not counted. It reads
// every record held, at most Options.MaxSessions.
func (s *Store) CountLive(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.countLiveLocked(now, nil)
}

// countLiveLocked counts the live records that match (nil: every one).
func (s *Store) countLiveLocked(now time.Time, match func(*session.Record) bool) int {
	n := 0
	for _, r := range s.records {
		if r.Live(now) && (match == nil || match(&r)) {
			n++
		}
	}
	return n
}

// Load implements session.Store.
func (s *Store) Load(ctx context.Context, key string, now time.Time) (session.Record, error) {
	if err := ctx.Err(); err != nil {
		return session.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok || !r.Live(now) {
		return session.Record{}, session.ErrNotFound
	}
	r.ClientCapabilities = clone(r.ClientCapabilities)
	r.ClientInfo = clone(r.ClientInfo)
	return r, nil
}

// Touch implements session.Store.
func (s *Store) Touch(ctx context.Context, key string, now time.Time) error {
	return s.update(ctx, key, now, func(r *session.Record) { r.LastUsedAt = now })
}

// SetLogLevel implements session.Store.
func (s *Store) SetLogLevel(ctx context.Context, key, level string, now time.Time) error {
	return s.update(ctx, key, now, func(r *session.Record) { r.LogLevel = level })
}

func (s *Store) update(ctx context.Context, key string, now time.Time, fn func(*session.Record)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok || !r.Live(now) {
		return session.ErrNotFound
	}
	fn(&r)
	s.records[key] = r
	return nil
}

// Delete implements session.Store.
func (s *Store) Delete(ctx context.Context, key string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		return session.ErrNotFound
	}
	s.removeLocked(&r)
	if !r.Live(now) {
		return session.ErrNotFound
	}
	return nil
}

// Sweep implements session.Store.
func (s *Store) Sweep(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweepLocked(now, limit), nil
}

func (s *Store) sweepLocked(now time.Time, limit int) int {
	n := 0
	for _, r := range s.records {
		if n >= limit {
			break
		}
		if !r.Live(now) {
			s.removeLocked(&r)
			n++
		}
	}
	return n
}

func (s *Store) removeLocked(r *session.Record) {
	delete(s.records, r.Key)
	o := ownerOf(r)
	if s.owners[o]--; s.owners[o] <= 0 {
		delete(s.owners, o)
	}
}

// Len returns the number of records held, live or expired.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

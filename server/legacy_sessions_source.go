package server

import (
	"time"

	"github.com/taskwire/taskwire/session"
)

// unusedSessionTTL is how long a session lives after initialize when no
// request names it: a client sends notifications/initialized right away,
// so a session nobody comes back to is a client that went away, or a
// flood. The first request that names it gives it the full IdleTimeout.
const unusedSessionTTL = time.Minute

// backdateUnused sets a new record's LastUsedAt so that, unless a request
// names the session and touches it, it ends unusedSessionTTL after now
// instead of IdleTimeout after now. The first such request always touches
// the record: it finds LastUsedAt more than touchInterval old.
func (m *sessionRecords) backdateUnused(rec *session.Record, now time.Time) {
	if m.opts.IdleTimeout > unusedSessionTTL {
		rec.LastUsedAt = now.Add(unusedSessionTTL - m.opts.IdleTimeout)
	}
}

// sourceSessions counts the live sessions this node opened for each
// Identity.Source, so that a source whose principals rotate (development
// identities) holds at most MaxPerPrincipal sessions, as one caller would.
// The counts are this node's, since it started: the store knows no
// sources. Guarded by the manager's mu.
type sourceSessions struct {
	bySource map[string]map[string]session.Record // the records as opened, by source and key
	sourceOf map[string]string                    // by key
	pending  map[string]int                       // creates under way, by source
	tracked  int                                  // records in bySource
}

// reserveSourceLocked takes one of source's session slots for a create
// under way, under m.mu. It reports errSessionLimit when source holds
// MaxPerPrincipal live sessions (with those being created) already, and
// errSessionsFull when the node tracks MaxSessions sessions of sources.
func (m *sessionRecords) reserveSourceLocked(source string, now time.Time) *protocolError {
	ss := &m.sources
	if ss.bySource == nil {
		ss.bySource, ss.sourceOf, ss.pending = map[string]map[string]session.Record{}, map[string]string{}, map[string]int{}
	}
	m.pruneSourceLocked(source, now)
	if len(ss.bySource[source])+ss.pending[source] >= m.opts.MaxPerPrincipal {
		return errSessionLimit
	}
	if ss.tracked >= m.opts.MaxSessions {
		for s := range ss.bySource {
			m.pruneSourceLocked(s, now)
		}
		if ss.tracked >= m.opts.MaxSessions {
			return errSessionsFull
		}
	}
	ss.pending[source]++
	return nil
}

// settleSourceLocked ends a create reserved by reserveSourceLocked, under
// m.mu, counting rec when it was stored.
func (m *sessionRecords) settleSourceLocked(source string, rec *session.Record) {
	ss := &m.sources
	if ss.pending[source]--; ss.pending[source] <= 0 {
		delete(ss.pending, source)
	}
	if rec == nil {
		return
	}
	keys := ss.bySource[source]
	if keys == nil {
		keys = map[string]session.Record{}
		ss.bySource[source] = keys
	}
	keys[rec.Key] = *rec
	ss.sourceOf[rec.Key] = source
	ss.tracked++
}

// pruneSourceLocked forgets the sessions of source that are no longer
// live, under m.mu. A session's freshest record is the cached one, which
// find updates when it touches it; a session the cache dropped is judged
// by its record as last seen.
func (m *sessionRecords) pruneSourceLocked(source string, now time.Time) {
	for key, rec := range m.sources.bySource[source] {
		if cs := m.cache[key]; cs != nil {
			rec = cs.rec
			m.sources.bySource[source][key] = rec
		}
		if !rec.Live(now) {
			m.dropSourceLocked(key)
		}
	}
}

// dropSourceLocked stops counting the session key, under m.mu.
func (m *sessionRecords) dropSourceLocked(key string) {
	ss := &m.sources
	source, ok := ss.sourceOf[key]
	if !ok {
		return
	}
	delete(ss.sourceOf, key)
	delete(ss.bySource[source], key)
	if len(ss.bySource[source]) == 0 {
		delete(ss.bySource, source)
	}
	ss.tracked--
}

// pruneSourcesLocked forgets every counted session that is no longer live,
// under m.mu; the periodic sweep calls it.
func (m *sessionRecords) pruneSourcesLocked(now time.Time) {
	for source := range m.sources.bySource {
		m.pruneSourceLocked(source, now)
	}
}

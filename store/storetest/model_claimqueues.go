package storetest

import (
	"fmt"
	"strings"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// opClaimQueues claims from the claimable queues of the model, one to all
// of them in a random order, each with its own limit and kinds, at once
// (backend.QueuesClaimer); each queue must get what a Claim of it would.
// Without the extension it claims nothing.
func (s *sequence) opClaimQueues() string {
	qc, ok := s.b.Jobs().(backend.QueuesClaimer)
	if !ok {
		return "claim queues: not supported"
	}
	// "" and "default" are one queue: one of the two spellings.
	names := []string{[]string{"", backend.DefaultQueue}[s.rng.IntN(2)], "q-b"}
	s.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	names = names[:1+s.rng.IntN(len(names))]
	qs := make([]backend.QueueClaim, len(names))
	descs := make([]string, len(names))
	for i, name := range names {
		qs[i] = backend.QueueClaim{Queue: name, Limit: 1 + s.rng.IntN(3)}
		if s.rng.IntN(3) == 0 {
			qs[i].Kinds = []string{[]string{toolA, toolB}[s.rng.IntN(2)]}
		}
		descs[i] = fmt.Sprintf("%q limit=%d kinds=%v", name, qs[i].Limit, qs[i].Kinds)
	}
	leaseDur := time.Duration(1000+s.rng.IntN(2000)) * time.Millisecond
	var instance string
	if n := s.rng.IntN(3); n < len(s.holds) {
		instance = s.holds[n].ID()
	}
	desc := fmt.Sprintf("claim queues [%s] lease=%v instance=%t", strings.Join(descs, ", "), leaseDur, instance != "")
	// The model's answer is computed before any job is marked running:
	// the queues are disjoint, so the order does not matter.
	want := make([][]*mTask, len(qs))
	for i, q := range qs {
		want[i] = s.claimable(q.Queue, q.Kinds, q.Limit)
	}
	jobs, err := qc.ClaimQueues(bg, backend.ClaimParams{Worker: "model", Lease: leaseDur, Now: s.c.Now(), Instance: instance}, qs)
	s.compare(desc, err, "ok")
	if len(jobs) != len(qs) {
		s.fatalf("%s: %d slices of jobs for %d queues", desc, len(jobs), len(qs))
	}
	n := 0
	for i := range qs {
		s.checkClaimed(fmt.Sprintf("%s: queue %s", desc, descs[i]), jobs[i], want[i], leaseDur, instance)
		n += len(jobs[i])
	}
	return fmt.Sprintf("%s → %d jobs", desc, n)
}

package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// Queues and priorities. Every job belongs to one queue, named at creation
// (EnqueueOptions.Queue), and has a priority within it
// (EnqueueOptions.Priority). A claim takes jobs of one queue
// (ClaimParams.Queue), the highest priority first and, within a priority,
// in the order JobStore.Claim describes.
const (
	// DefaultQueue is the queue of a job enqueued without one, and the
	// queue a claim without one takes jobs from.
	DefaultQueue = "default"
	// MaxQueueNameBytes bounds the length of a queue name.
	MaxQueueNameBytes = 64
	// HighestPriority is the most urgent priority: a claim takes the jobs
	// of priority 1 before those of 2, and so on up to LowestPriority.
	HighestPriority = 1
	// LowestPriority is the least urgent priority.
	LowestPriority = 4
	// DefaultPriority is the priority of a job enqueued with Priority
	// zero: the highest, so that only the jobs an application marks as
	// less urgent wait for others.
	DefaultPriority = HighestPriority
)

// CheckQueue reports why name is not a queue name, or nil. A queue name is
// 1 to MaxQueueNameBytes bytes of ASCII letters, digits, '_', '-' and '.',
// starting with a letter or a digit: operators choose them, and they are
// metric labels and console text as they are. The error does not repeat
// name.
func CheckQueue(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a queue name must not be empty")
	case len(name) > MaxQueueNameBytes:
		return fmt.Errorf("a queue name must be at most %d bytes, got %d", MaxQueueNameBytes, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '-' || c == '.'):
		default:
			return fmt.Errorf("a queue name must hold only ASCII letters, digits, '_', '-' and '.', " +
				"starting with a letter or a digit")
		}
	}
	return nil
}

// CheckPriority reports why p is no job priority, or nil: a priority is
// between HighestPriority and LowestPriority, or zero for
// DefaultPriority.
func CheckPriority(p int) error {
	if p != 0 && (p < HighestPriority || p > LowestPriority) {
		return fmt.Errorf("a priority must be between %d (highest) and %d (lowest), got %d", HighestPriority, LowestPriority, p)
	}
	return nil
}

// QueueClaim is one queue of a QueuesClaimer.ClaimQueues call: up to
// Limit jobs of Queue whose kind is in Kinds, as ClaimParams.Queue,
// ClaimParams.Kinds and ClaimParams.Limit describe them for Claim.
type QueueClaim struct {
	// Queue is the queue ("" means DefaultQueue).
	Queue string
	// Kinds limits the queue's jobs claimed to these kinds; empty means
	// every kind.
	Kinds []string
	// Limit bounds the jobs claimed from the queue. At least 1.
	Limit int
}

// MaxClaimQueues bounds the queues of one ClaimQueues call (the queues a
// worker runtime serves, at most worker.MaxQueues).
const MaxClaimQueues = 32

// QueuesClaimer is an optional extension of JobStore, for a store that
// can claim from several queues in one statement whose cost is one
// bounded range scan of its claim index per queue. A worker runtime that
// serves several queues claims for those with free slots at once through
// it, instead of one Claim per queue.
type QueuesClaimer interface {
	// ClaimQueues claims from each of qs what Claim would with p's
	// Worker, Lease, Now and Instance and that queue's Queue, Kinds and
	// Limit, in one statement (one transaction): the jobs of one queue are
	// ordered as Claim orders them, and the queues do not take from each
	// other's limits. It returns one slice per element of qs, in the order
	// of qs. p.Queue, p.Kinds and p.Limit must be zero; qs must hold 1 to
	// MaxClaimQueues queues, none twice, each with a Limit of at least 1.
	// It fails, claiming nothing, when any of that does not hold.
	ClaimQueues(ctx context.Context, p ClaimParams, qs []QueueClaim) ([][]JobRow, error)
}

// CheckQueueClaims reports why p and qs are not a valid ClaimQueues
// call (see QueuesClaimer), or nil; a store calls it before claiming.
func CheckQueueClaims(p ClaimParams, qs []QueueClaim) error {
	switch {
	case p.Queue != "" || len(p.Kinds) > 0 || p.Limit != 0:
		return errors.New("ClaimQueues takes the queue, kinds and limit from its QueueClaims, not from ClaimParams")
	case len(qs) < 1 || len(qs) > MaxClaimQueues:
		return fmt.Errorf("ClaimQueues needs 1 to %d queues, got %d", MaxClaimQueues, len(qs))
	case p.Lease < time.Millisecond:
		return errors.New("ClaimQueues needs a Lease of at least 1 ms")
	}
	seen := make(map[string]bool, len(qs))
	for _, q := range qs {
		name := cmp.Or(q.Queue, DefaultQueue)
		if q.Limit < 1 {
			return fmt.Errorf("ClaimQueues: queue %q needs a Limit of at least 1", name)
		}
		if seen[name] {
			return fmt.Errorf("ClaimQueues: queue %q is given twice", name)
		}
		seen[name] = true
	}
	return nil
}

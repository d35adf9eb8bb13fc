package backend

import "fmt"

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

package server

import (
	"context"
	"testing"
	"time"
)

// TestTaskOpAcquireAllocatesNothing: an uncontended task operation (every
// tasks/get, every task creation) takes its slots without the timer of a
// bounded wait.
func TestTaskOpAcquireAllocatesNothing(t *testing.T) {
	p := newHandlerPool(4, 2, 8, time.Second)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if err := p.acquire(ctx, true); err != nil {
			t.Fatal(err)
		}
		p.release(true)
	})
	if allocs != 0 {
		t.Errorf("acquire and release of a task operation: %v allocations, want 0", allocs)
	}
}

// BenchmarkHandlerPoolTaskOp is the pool's cost on every task operation
// when a slot is free.
func BenchmarkHandlerPoolTaskOp(b *testing.B) {
	p := newHandlerPool(4, 2, 8, time.Second)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.acquire(ctx, true); err != nil {
			b.Fatal(err)
		}
		p.release(true)
	}
}

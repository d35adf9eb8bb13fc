package main

import (
	"encoding/json"
	"fmt"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// The pg-queues and sqlite-queues phases are the worker phases run side by
// side in one process, as -progress runs them: without is the jobs in one
// (the default) queue, as pg-worker creates them, and with is the same
// number of jobs spread round-robin over -queues queues, one kind each,
// worked by one runtime that serves them all, each queue with an even
// share of -concurrency (worker.Options.Queues). The verdict compares the
// medians: claim throughput with several queues within 10 % of one queue.

// forQueues returns the configuration of a queues phase.
func (c config) forQueues() config {
	c.queuePhase, c.Progress, c.Checkpoint = true, false, false
	return c
}

// workerPhase names the phase of a worker run's figures.
func (c config) workerPhase(kind string) string {
	if c.queuePhase {
		return phaseName(kind, "queues")
	}
	return phaseName(kind, "worker")
}

// queueName and queueKind name the queue and the job kind of queue q of a
// queues run.
func queueName(q int) string { return fmt.Sprintf("q%d", q) }
func queueKind(q int) string { return fmt.Sprintf("%s-%d", benchKind, q) }

// queueCreations returns, per queue, the creation context and options of
// the tasks a run creates: for one queue the kind and options pg-worker
// has always used (the default queue), else a kind and queue each.
func queueCreations(queues int) ([]*task.CreationContext, []backend.EnqueueOptions, error) {
	if queues <= 1 {
		cc, err := creationContext(1)
		return []*task.CreationContext{cc}, []backend.EnqueueOptions{{}}, err
	}
	ccs := make([]*task.CreationContext, queues)
	opts := make([]backend.EnqueueOptions, queues)
	args, _ := json.Marshal(benchArgs{N: 1})
	for q := range queues {
		o, err := task.NewOrigin(task.OriginParams{
			ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: benchEndpoint, Operation: mcp.MethodToolsCall,
			Tool: queueKind(q), Arguments: args,
		})
		if err != nil {
			return nil, nil, err
		}
		ccs[q] = &task.CreationContext{
			Request: task.RequestContext{Endpoint: benchEndpoint, Tenant: benchTenant, Principal: benchTenant,
				ProtocolVersion: mcp.LatestProtocolVersion},
			Origin: o,
		}
		opts[q] = backend.EnqueueOptions{Queue: queueName(q)}
	}
	return ccs, opts, nil
}

// queueConfigs returns the worker.Options.Queues of a run over queues
// queues: nil for one (the runtime's default), else an even share of
// concurrency each.
func queueConfigs(queues, concurrency int) map[string]worker.QueueConfig {
	if queues <= 1 {
		return nil
	}
	qs := map[string]worker.QueueConfig{}
	for q := range queues {
		qs[queueName(q)] = worker.QueueConfig{MaxWorkers: concurrency / queues}
	}
	return qs
}

// fmtQueues describes the queues of a run.
func fmtQueues(queues, concurrency int) string {
	if queues <= 1 {
		return "one queue"
	}
	return fmt.Sprintf("%d queues of %d workers", queues, concurrency/queues)
}

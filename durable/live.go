package durable

import (
	"errors"
	"fmt"
)

// AddRawLive adds a raw durable tool to a set that may be served and
// worked already, as a program that learns of tools while it runs (a
// gateway mirroring another server) needs. It checks t as Check would
// (every problem in the error, and then nothing is added), including a
// name the set holds already. It then registers the handler on every
// runtime Work was given (worker.Runtime.AddRawHandler, which a running
// runtime accepts: its claims take the tool's jobs from then on) and adds
// the tool to every endpoint Serve was given (server.PutTaskTool in one
// server.Endpoint.UpdateTools), so that calls create tasks. Before Serve
// and Work it only records the tool, which they register as AddRaw's.
//
// An endpoint must be served already (server.Endpoint.Served) and serve
// Tasks; a runtime that runs must serve the tool's queue. A refusal of
// either is returned, joined, and leaves the tool in the set (a later
// AddRawLive of the name fails as a duplicate) and registered wherever it
// was accepted: check the name against the endpoint first. The tools a
// fleet's processes add this way may differ for a while; a process that
// has not added a tool yet does not claim its jobs, which wait in the
// store for one that has.
func (s *Set) AddRawLive(t RawTool) error {
	if s == nil {
		return errNoSet
	}
	var one Set
	AddRaw(&one, t)
	if err := one.check(true); err != nil {
		return err
	}
	d, im := one.decls[0], one.impls[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.declOf(d.name) != nil {
		return fmt.Errorf("durable: tool %q: declared twice", d.name)
	}
	s.decls = append(s.decls, d)
	s.impls = append(s.impls, im)
	var errs []error
	for _, rt := range s.worked {
		if err := im.work(rt, d); err != nil {
			errs = append(errs, fmt.Errorf("durable: tool %q: %w", d.name, err))
		}
	}
	for _, sv := range s.served {
		if err := sv.ep.UpdateTools(d.put(sv.enq)); err != nil {
			errs = append(errs, fmt.Errorf("durable: tool %q: %w", d.name, err))
		}
	}
	return errors.Join(errs...)
}

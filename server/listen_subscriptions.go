package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// SubscriptionOptions enable subscriptions/listen: task notifications
// (notifications.taskIds) on endpoints that serve Tasks with a manager that
// publishes events, and list changes (toolsListChanged, promptsListChanged
// and resourcesListChanged, for the lists the endpoint serves; see
// Server.NotifyListChanged) on every endpoint. Setting them requires an
// explicit Authorizer.
type SubscriptionOptions struct {
	// Authorizer decides each listen and each renewal. Required; use
	// AllowSubscriptions to accept every admitted caller.
	Authorizer SubscriptionAuthorizer
	// AuthorizationTimeout bounds each authorization and each projection
	// (lookup, catalog policy and sanitizer together). Default 5 s.
	AuthorizationTimeout time.Duration
	// MaxSubscriptions bounds pending and active listens together. Default
	// 8,192. A listen beyond it fails with HTTP 503 before its stream opens.
	MaxSubscriptions int
	// MaxPerTenant bounds one tenant's listens. Default 1,024. A listen
	// beyond it fails with HTTP 503, like MaxSubscriptions.
	MaxPerTenant int
	// MaxPerPrincipal bounds the listens of one authenticated principal
	// (Identity.Principal), so that one client cannot take the capacity
	// of others. Default 32. A listen beyond it fails with HTTP 429 and
	// Retry-After before its stream opens, before the authorizer and any
	// lookup. Anonymous callers (an empty Principal) are bounded by
	// MaxPerTenant only, unless their Identity.Source is set: a source is
	// held to MaxPerPrincipal listens as well, whatever principals its
	// requests name.
	MaxPerPrincipal int
	// MaxLifetime ends a listen gracefully after this long; the client
	// reconnects. Default one hour.
	MaxLifetime time.Duration
	// WriteTimeout closes a stream whose client does not read a frame
	// within it, so a slow subscriber cannot hold server resources. A
	// write may get up to an eighth more: a busy stream renews its write
	// deadline only every eighth of the timeout, not on every write.
	// Default 10 s.
	WriteTimeout time.Duration
}

// SubscriptionAuthorizer authorizes listens. It is asked when a listen
// opens and again to renew it before its grant expires; a renewal can keep
// or narrow the accepted task IDs, never widen them. An error refuses the
// listen (HTTP 403) or, on renewal, ends it gracefully.
type SubscriptionAuthorizer interface {
	AuthorizeSubscription(ctx context.Context, req *SubscriptionRequest) (SubscriptionGrant, error)
}

// SubscriptionRequest describes a listen to authorize.
type SubscriptionRequest struct {
	Identity Identity
	Endpoint string
	// TaskIDs are the requested IDs (first authorization) or the currently
	// accepted ones (renewal).
	TaskIDs []string
	// Renewal is true when an active listen is being renewed.
	Renewal bool
}

// SubscriptionGrant is an authorization decision.
type SubscriptionGrant struct {
	// Until is when the grant expires; the server renews it at half its
	// length. It must be in the future.
	Until time.Time
	// TaskIDs, when non-nil, limits the task IDs the listen may follow to
	// this subset of the request's.
	TaskIDs []string
}

// AllowSubscriptions returns an authorizer that accepts every admitted
// caller for lease at a time. Task notifications still pass the manager's
// own authorization on every lookup.
func AllowSubscriptions(lease time.Duration) SubscriptionAuthorizer {
	return allowAll{lease: lease}
}

type allowAll struct{ lease time.Duration }

func (a allowAll) AuthorizeSubscription(context.Context, *SubscriptionRequest) (SubscriptionGrant, error) {
	return SubscriptionGrant{Until: time.Now().Add(a.lease)}, nil
}

func (o *SubscriptionOptions) setDefaults() {
	if o.AuthorizationTimeout == 0 {
		o.AuthorizationTimeout = 5 * time.Second
	}
	if o.MaxSubscriptions == 0 {
		o.MaxSubscriptions = 8192
	}
	if o.MaxPerTenant == 0 {
		o.MaxPerTenant = 1024
	}
	if o.MaxPerPrincipal == 0 {
		o.MaxPerPrincipal = 32
	}
	if o.MaxLifetime == 0 {
		o.MaxLifetime = time.Hour
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 10 * time.Second
	}
}

// MaxListenTaskIDs bounds notifications.taskIds of one listen.
const MaxListenTaskIDs = 256

// registry tracks listens: capacity, and which subscriptions follow which
// task IDs, so that a hint reaches only them.
type registry struct {
	mu           sync.Mutex
	max          int
	maxTenant    int
	maxPrincipal int // zero: not bounded per principal
	total        int
	perTenant    map[string]int
	perPrincipal map[string]int
	perSource    map[string]int // by Identity.Source, bounded by maxPrincipal too
	byTask       map[string]map[*subscription]struct{}
	byList       map[string]map[*subscription]struct{} // listens asking for list changes, by endpoint name
	byResource   map[string]map[*subscription]struct{} // listens following resource updates, by URI
	// flights are the shared lookups of followed tasks, by task ID and
	// view; a hint for a task forgets its flights (see flight). Guarded by
	// fmu, which is taken after mu when both are held, so that listens
	// joining a flight do not contend with hints and capacity on mu.
	fmu         sync.Mutex
	flights     map[string]map[string]*flight
	placeholder string          // stands for the subscription ID in a flight's rendering
	closing     <-chan struct{} // done.Done()
	done        context.Context // canceled by close
	cancel      context.CancelFunc
	closed      bool
	// detached counts the listen streams taken over from net/http that
	// have not yet closed their connection; drained, when not nil, is
	// closed when it reaches zero (Server.Close waits for it).
	detached int
	drained  chan struct{}
	// writers bounds the goroutines that help a fan-out write its
	// streams (see deliverAll), across every fan-out of the node.
	writers chan struct{}
	// fanouts counts the fan-outs started and not yet delivered; Add only
	// under mu and before close.
	fanouts sync.WaitGroup
	// callbacks counts the goroutines of listens and fan-outs that run
	// application callbacks; close refuses new ones and Server.Close
	// waits for them, bounded.
	callbacks joinGroup
}

func newRegistry(max, maxTenant int) *registry {
	done, cancel := context.WithCancel(context.Background())
	return &registry{
		max: max, maxTenant: maxTenant, perTenant: map[string]int{}, perPrincipal: map[string]int{}, perSource: map[string]int{},
		byTask: map[string]map[*subscription]struct{}{}, closing: done.Done(), done: done, cancel: cancel,
		flights: map[string]map[string]*flight{}, placeholder: newPlaceholder(),
		writers: make(chan struct{}, fanOutHelpers()),
	}
}

// bind returns a context derived from ctx that is also canceled when the
// registry closes, so that every wait of a listen (a lookup, a projection
// slot held by a callback that ignores cancellation, a renewal) ends on
// Server.Close; stop releases it.
func (r *registry) bind(ctx context.Context) (bound context.Context, stop func()) {
	bound, cancel := context.WithCancel(ctx)
	unregister := context.AfterFunc(r.done, cancel)
	return bound, func() {
		unregister()
		cancel()
	}
}

var errSubscriptionsFull = newProtocolError(http.StatusServiceUnavailable, mcp.NewError(mcp.CodeInternalError, "Too many subscriptions"))

// reserve takes capacity for a new listen of tenant.
func (r *registry) reserve(tenant string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.total >= r.max || r.perTenant[tenant] >= r.maxTenant {
		return false
	}
	r.total++
	r.perTenant[tenant]++
	return true
}

// listenRetryAfter is the Retry-After of a listen refused because its
// principal holds MaxPerPrincipal listens already.
const listenRetryAfter = 5 * time.Second

// reservePrincipal takes one of the caller's listen slots: one of its
// principal's and one of its source's (Identity.Source). An empty
// principal (an anonymous caller) or source is not counted.
func (r *registry) reservePrincipal(principal, source string) bool {
	if principal == "" && source == "" {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.maxPrincipal > 0 && ((principal != "" && r.perPrincipal[principal] >= r.maxPrincipal) ||
		(source != "" && r.perSource[source] >= r.maxPrincipal)) {
		return false
	}
	if principal != "" {
		r.perPrincipal[principal]++
	}
	if source != "" {
		r.perSource[source]++
	}
	return true
}

// releasePrincipal returns the slots taken by reservePrincipal.
func (r *registry) releasePrincipal(principal, source string) {
	if principal == "" && source == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releasePrincipalLocked(principal, source)
}

func (r *registry) releasePrincipalLocked(principal, source string) {
	if principal != "" {
		if r.perPrincipal[principal]--; r.perPrincipal[principal] <= 0 {
			delete(r.perPrincipal, principal)
		}
	}
	if source != "" {
		if r.perSource[source]--; r.perSource[source] <= 0 {
			delete(r.perSource, source)
		}
	}
}

// release returns capacity (the principal's too) and forgets every task
// the subscription followed.
func (r *registry) release(s *subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total--
	if r.perTenant[s.tenant]--; r.perTenant[s.tenant] == 0 {
		delete(r.perTenant, s.tenant)
	}
	r.releasePrincipalLocked(s.principal, s.source)
	r.unwatchListsLocked(s)
	r.unwatchResourcesLocked(s)
	for id := range s.watching {
		r.unwatchLocked(s, id)
	}
}

// watch makes hints for ids reach s.
func (r *registry) watch(s *subscription, ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		set := r.byTask[id]
		if set == nil {
			set = map[*subscription]struct{}{}
			r.byTask[id] = set
		}
		set[s] = struct{}{}
		s.watching[id] = true
	}
}

// unwatch stops hints for id reaching s.
func (r *registry) unwatch(s *subscription, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unwatchLocked(s, id)
}

func (r *registry) unwatchLocked(s *subscription, id string) {
	if set := r.byTask[id]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(r.byTask, id)
			r.forgetFlightsLocked(id)
		}
	}
	delete(s.watching, id)
}

// forgetFlightsLocked forgets (and marks superseded) every flight of
// taskID; r.mu is held.
func (r *registry) forgetFlightsLocked(taskID string) {
	r.fmu.Lock()
	for _, f := range r.flights[taskID] {
		f.superseded.Store(true)
	}
	delete(r.flights, taskID)
	r.fmu.Unlock()
}

// hint is the server's one subscriber of the manager's EventPublisher. It
// never blocks: it forgets the task's flights, which started before this
// hint. It queues the ID on each following subscription whose stream
// cannot be written without waiting, and wakes it; the others it hands to
// the fan-out, by view (see fanOut), which carries the hint to them.
func (r *registry) hint(taskID string) {
	r.mu.Lock()
	subs := r.byTask[taskID]
	if len(subs) == 0 {
		r.mu.Unlock()
		return
	}
	r.forgetFlightsLocked(taskID)
	var direct map[string][]*subscription
	for s := range subs {
		if !s.direct.Load() {
			s.enqueue(taskID)
			continue
		}
		if direct == nil {
			direct = map[string][]*subscription{}
		}
		direct[s.view] = append(direct[s.view], s)
	}
	r.mu.Unlock()
	for view, group := range direct {
		r.fanOut(taskID, view, group)
	}
}

// close ends every listen gracefully and refuses new ones.
func (r *registry) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.cancel()
		r.callbacks.close()
	}
}

// count returns the number of pending and active listens.
func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// detach counts a listen stream taken over from net/http; undetach is
// called once its connection is closed.
func (r *registry) detach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.detached++
}

func (r *registry) undetach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.detached--; r.detached == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
}

// waitDetached waits until every listen stream taken over from net/http
// has closed its connection, and every fan-out started before close has
// written or handed back its streams (each within its flight's deadline,
// which close ends).
func (r *registry) waitDetached() {
	defer r.fanouts.Wait()
	r.mu.Lock()
	if r.detached == 0 {
		r.mu.Unlock()
		return
	}
	if r.drained == nil {
		r.drained = make(chan struct{})
	}
	drained := r.drained
	r.mu.Unlock()
	<-drained
}

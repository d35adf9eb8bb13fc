package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// Relaying the upstream's input requests.
//
// An upstream tool may ask for input while it runs: a 2026-07-28 upstream
// answers the call with an input_required round, a 2025-era one sends
// elicitation/create or sampling/createMessage on the call's stream. The
// gateway's client hands both to the handlers below, with the call's
// context. During a run of a retry tool the request becomes an input round
// of the downstream task (worker.Job.Ask, under a key derived from the
// request): the run ends, the task is input_required with the upstream's
// request, and once the client has answered, the next run calls the
// upstream again and answers the same request, when the upstream asks it
// again, with the client's answer. That second call is why only retry
// tools are relayed: for another task tool the request is refused (the
// upstream sees an error for it) and the call goes on or fails as the
// upstream decides. A call passed through inline asks its own client
// instead (relayInline, held.go).

// relayKinds are the input kinds a relaying task tool declares
// (server.WithTaskInput): what an upstream may ask.
var relayKinds = []string{task.InputElicitationForm, task.InputElicitationURL, task.InputSampling}

// errNotRelayed is the handlers' error for a request the gateway does not
// relay; the client turns it into an error toward the upstream.
var errNotRelayed = errors.New("gateway: the upstream's input request is not relayed for this call")

// textNotRelayed is the text of a task whose non-retry tool asked for input
// and failed without it.
const textNotRelayed = "The upstream tool asked for input, which the gateway relays only for tools marked safe to " +
	"retry (it calls them again with the answer)."

// relayKey is the context key of a run's *relayRun.
type relayKey struct{}

// relayRun is what the handlers need of the task run whose upstream call
// they serve.
type relayRun struct {
	job    *worker.Job
	retry  bool
	cancel context.CancelCauseFunc // ends the upstream call once input is pending

	// inline marks a call passed through inline: answers holds the
	// downstream request's input responses, and a request without one is
	// collected in asked, for the downstream input_required result.
	// modern: the upstream speaks 2026-07-28, whose input rounds are
	// designed to be called again with the answers.
	inline, modern bool
	answers        mcp.InputResponses
	// held is the held call (held.go) of a call passed through inline
	// toward a 2025-era upstream, whose requests it relays.
	held *heldCall

	mu      sync.Mutex
	task    string // the upstream task the run follows, if any
	pending bool   // a request was recorded as pending: the run must end
	refused bool   // a request was refused (not a retry tool)
	// ambiguous: a stdio upstream sent a request naming no task while
	// this call and others were in flight, and it was refused.
	ambiguous bool
	asked     mcp.InputRequests
}

// errAmbiguous answers a stdio upstream's request that names no task
// while no call or several calls are in flight: stdio ties no request to
// a call, so the gateway cannot tell which call, and which client, it
// serves.
var errAmbiguous = mcp.NewError(mcp.CodeInternalError,
	"The gateway cannot tell which of its calls this request serves (it names no task, and not exactly one call is in flight); it is not relayed.")

// textAmbiguous is the text of a task whose call failed after the stdio
// upstream's input request was refused as errAmbiguous.
const textAmbiguous = "The upstream tool asked for input while other calls to the same upstream process were in flight; " +
	"over stdio the gateway cannot tell which call such a request serves, so it refused it."

// markAmbiguous records, on the run of ctx if any, that an input request
// was refused as errAmbiguous while its call was in flight.
func markAmbiguous(ctx context.Context) {
	if r, _ := ctx.Value(relayKey{}).(*relayRun); r != nil {
		r.mu.Lock()
		r.ambiguous = true
		r.mu.Unlock()
	}
}

// withInlineRelay returns the context of the upstream call of a call
// passed through inline, whose downstream request carried answers.
func withInlineRelay(ctx context.Context, answers mcp.InputResponses, modern bool) (context.Context, *relayRun) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &relayRun{inline: true, modern: modern, answers: answers, cancel: cancel}
	return context.WithValue(ctx, relayKey{}, r), r
}

// inlineRound returns the requests a call passed through inline must ask
// its client for (an input_required result), or nil.
func (r *relayRun) inlineRound() mcp.InputRequests {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.pending {
		return nil
	}
	return r.asked
}

// following records that the run of ctx follows the upstream task id: its
// requests (2025-11-25 sends them on the stream of tasks/result) are
// relayed for every task tool, since answering them repeats no call.
func following(ctx context.Context, id string) {
	if r, _ := ctx.Value(relayKey{}).(*relayRun); r != nil {
		r.mu.Lock()
		r.task = id
		r.mu.Unlock()
	}
}

// withRelay returns the context of a run's upstream call, carrying r, and
// cancellable by r once the run waits for input.
func withRelay(ctx context.Context, job *worker.Job, retry bool) (context.Context, *relayRun) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &relayRun{job: job, retry: retry, cancel: cancel}
	return context.WithValue(ctx, relayKey{}, r), r
}

// outcome reports what the run's requests came to: pending (return
// worker.ErrInputPending), refused, or neither.
func (r *relayRun) outcome() (pending, refused, ambiguous bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending, r.refused, r.ambiguous
}

// relayHandlers are the gateway client's handlers of the upstream's input
// requests.
func relayHandlers() client.Handlers {
	return client.Handlers{
		Elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			var out mcp.ElicitResult
			if err := relay(ctx, mcp.MethodElicitationCreate, p, &out); err != nil {
				return nil, err
			}
			return &out, nil
		},
		ElicitURL: true,
		Sample: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			var out mcp.CreateMessageResult
			if err := relay(ctx, mcp.MethodSamplingCreateMessage, p, &out); err != nil {
				return nil, err
			}
			return &out, nil
		},
	}
}

// relay answers one upstream request of method with params from the run
// in ctx: with the downstream client's answer when the task holds one,
// else by recording the request as pending and ending the call.
func relay(ctx context.Context, method string, params, out any) error {
	r, _ := ctx.Value(relayKey{}).(*relayRun)
	if r == nil {
		return errNotRelayed // a pass-through call
	}
	if r.inline {
		return r.relayInline(method, params, out)
	}
	r.mu.Lock()
	followed := r.task
	if !r.retry && followed == "" {
		r.refused = true
		r.mu.Unlock()
		return errNotRelayed
	}
	r.mu.Unlock()
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("gateway: encoding the upstream's %s: %w", method, err)
	}
	key := inputKey(method, raw)
	if followed != "" {
		key = taskInputKey(followed, "", &mcp.InputRequest{Method: method, Params: raw})
	}
	answer, err := r.job.Ask(ctx, key, &mcp.InputRequest{Method: method, Params: raw})
	if errors.Is(err, worker.ErrInputPending) {
		r.mu.Lock()
		r.pending = true
		r.mu.Unlock()
		r.cancel(worker.ErrInputPending)
		return err
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("gateway: the client's answer to %s: %w", method, err)
	}
	return nil
}

// inputKey is the input round key of an upstream request: the same
// request, asked again by the next run's call, finds the same answer.
func inputKey(method string, params json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write(params)
	return "upstream-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// settleRelay decides a run whose upstream call (or upstream task) ended
// with err while its input requests were relayed: a request recorded as
// pending ends the run waiting for the client's answer, whatever the call
// did after it; a request refused (not a retry tool) that the call failed
// on fails the task saying why. settled is false otherwise, and when the
// run's own context ended (cancelled, lease lost, shutdown).
func (g *Gateway) settleRelay(ctx context.Context, r *relayRun, name string, err error) (_ *mcp.CallToolResult, _ error, settled bool) {
	if ctx.Err() != nil {
		return nil, nil, false
	}
	switch pending, refused, ambiguous := r.outcome(); {
	case pending:
		return nil, worker.ErrInputPending, true
	case refused && err != nil:
		g.log.Warn("gateway: upstream input request of a tool not safe to retry refused", "tool", name)
		return nil, worker.ToolError(textNotRelayed), true
	case ambiguous && err != nil:
		g.log.Warn("gateway: an upstream call failed after its process's input request was refused as ambiguous", "tool", name)
		return nil, worker.ToolError(textAmbiguous), true
	}
	return nil, nil, false
}

// relayInline answers a request of the upstream during a call passed
// through inline: with the downstream request's answer to it, when it
// carries one; else, for a 2026-07-28 upstream, by ending the call so
// that the gateway asks its own client (the client then calls again with
// the answer, and the upstream, called again, asks the same request and
// gets it). A 2025-era upstream's call cannot be made again like an input
// round: its request is relayed on the open call (held.go), or refused
// when the call is not held.
func (r *relayRun) relayInline(method string, params, out any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("gateway: encoding the upstream's %s: %w", method, err)
	}
	key := inputKey(method, raw)
	if ans, ok := r.answers[key]; ok {
		if err := json.Unmarshal(ans, out); err != nil {
			return fmt.Errorf("gateway: the client's answer to %s: %w", method, err)
		}
		return nil
	}
	if !r.modern && r.held != nil {
		return r.held.ask(r.held.callCtx, method, raw, out)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.modern {
		// A client that declared no input capability (held.go): the
		// upstream gets what a client without them answers.
		r.refused = true
		return mcp.MethodNotFound()
	}
	if r.asked == nil {
		r.asked = mcp.InputRequests{}
	}
	r.asked[key] = &mcp.InputRequest{Method: method, Params: raw}
	r.pending = true
	r.cancel(errInputAsked)
	return errInputAsked
}

// errInputAsked ends an upstream call passed through inline whose input
// the gateway asks its own client for.
var errInputAsked = errors.New("gateway: the upstream's input request is asked of the client")

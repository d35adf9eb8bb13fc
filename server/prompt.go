package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/mcp"
)

// PromptHandler renders a prompt. args holds the caller's arguments; every
// argument the prompt declares as required is present.
type PromptHandler func(ctx context.Context, req *Request, args map[string]string) (*mcp.GetPromptResult, error)

// CompletionHandler suggests values for a prompt or resource-template
// argument (completion/complete).
type CompletionHandler func(ctx context.Context, req *Request, params *mcp.CompleteParams) (*mcp.CompleteResult, error)

type promptEntry struct {
	prompt  *mcp.Prompt
	handler PromptHandler
}

// AddPrompt registers a prompt. It panics if ep already belongs to a
// server (see Endpoint).
func (ep *Endpoint) AddPrompt(p *mcp.Prompt, h PromptHandler) {
	ep.mustBeOpen()
	if p.Name == "" {
		ep.fail(errors.New("prompt: name is required"))
		return
	}
	if _, dup := ep.promptIndex[p.Name]; dup {
		ep.fail(fmt.Errorf("prompt %q is registered twice", p.Name))
		return
	}
	e := &promptEntry{prompt: p, handler: h}
	ep.prompts = append(ep.prompts, e)
	ep.promptIndex[p.Name] = e
}

// SetCompletionHandler enables completion/complete on the endpoint. It
// panics if ep already belongs to a server (see Endpoint).
func (ep *Endpoint) SetCompletionHandler(h CompletionHandler) {
	ep.mustBeOpen()
	ep.completion = h
}

func (ep *Endpoint) listPrompts(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	var src func(context.Context, *Request, string) ([]*mcp.Prompt, string, error)
	if ep.promptSrc != nil {
		src = ep.promptSrc.ListPrompts
	}
	items, next, perr := sourcedPage(ctx, c, ep.prompts, func(e *promptEntry) *mcp.Prompt { return e.prompt }, src)
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	return &mcp.ListPromptsResult{
		Prompts: items, NextCursor: next, TTLMs: ep.opts.CacheTTL.Milliseconds(), CacheScope: ep.cacheScope,
	}, OutcomeComplete, nil
}

func (ep *Endpoint) getPrompt(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	e, ok := ep.promptIndex[c.params.Name]
	if !ok && (ep.promptSrc == nil || c.params.Name == "") {
		return nil, OutcomeProtocolError, errUnknownPrompt
	}
	var args map[string]string
	if len(c.params.Arguments) > 0 {
		if err := json.Unmarshal(c.params.Arguments, &args); err != nil {
			return nil, OutcomeProtocolError, invalidParams("Invalid params: prompt arguments must be an object of strings")
		}
	}
	var render PromptHandler
	if !ok {
		render = ep.promptSrc.GetPrompt // a name none of the endpoint's prompts has
	} else {
		for _, a := range e.prompt.Arguments {
			if _, ok := args[a.Name]; a.Required && !ok {
				return nil, OutcomeProtocolError, invalidParams("Invalid params: missing required prompt argument")
			}
		}
		render = e.handler
	}
	if perr := c.chargeRequestLimiter(); perr != nil {
		return nil, OutcomeRateLimited, perr
	}
	rq, perr := c.newRequest(c.params.Name)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	res, perr := c.runHandler(ctx, rq, func(ctx context.Context, rq *Request) (any, error) {
		r, err := render(ctx, rq, args)
		if errors.Is(err, ErrPromptNotFound) {
			return nil, errUnknownPrompt
		}
		if err != nil {
			return nil, err
		}
		return r, nil
	})
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	switch r := res.(type) {
	case *mcp.InputRequiredResult:
		return r, OutcomeInputRequired, nil
	case *mcp.GetPromptResult:
		if r == nil {
			return nil, OutcomeInternalError, errInternal
		}
		return r, OutcomeComplete, nil
	}
	return nil, OutcomeInternalError, errInternal
}

func (ep *Endpoint) complete(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	var p mcp.CompleteParams
	if err := json.Unmarshal(c.req.Params, &p); err != nil || p.Ref == nil {
		return nil, OutcomeProtocolError, invalidParams("Invalid params: malformed completion request")
	}
	rq, perr := c.newRequest("")
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	res, perr := c.runHandler(ctx, rq, func(ctx context.Context, rq *Request) (any, error) {
		r, err := ep.completion(ctx, rq, &p)
		if err != nil {
			return nil, err
		}
		return r, nil
	})
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	r, ok := res.(*mcp.CompleteResult)
	if !ok || r == nil {
		return nil, OutcomeInternalError, errInternal
	}
	return r, OutcomeComplete, nil
}

package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// The 2025-era Streamable HTTP transport (revisions 2025-06-18 and
// 2025-11-25), served on the same endpoint URL as the 2026-07-28 pipeline.
//
// The era classifier runs in serve after the transport limits: a POST is
// modern when its MCP-Protocol-Version header names 2026-07-28 or later
// (modernByHeader, a map lookup and a ten-byte check: the modern path pays
// nothing else) or when its params._meta carries
// io.modelcontextprotocol/protocolVersion; any other POST to an endpoint
// that serves a 2025 revision is legacy. GET and DELETE carrying
// Mcp-Session-Id on such an endpoint are legacy too; every other GET and
// DELETE is 405 as before. The modern path ignores Mcp-Session-Id.

// modernByHeader reports whether the header half of the classifier names
// the modern era.
func modernByHeader(h http.Header) bool {
	vs := h[mcp.HeaderProtocolVersion]
	return len(vs) == 1 && mcp.IsModernVersion(strings.Trim(vs[0], " \t"))
}

// serveLegacy handles a POST the header half of the classifier did not
// claim for the modern era. It reports false, having written nothing, when
// the body's _meta claims the modern era: the caller then runs the modern
// pipeline. Otherwise it answers: initialize opens a session; anything
// else needs one (400 without Mcp-Session-Id, 404 for one that is not the
// admitted identity's live session); notifications and responses are 202.
func (s *Server) serveLegacy(ep *Endpoint, w http.ResponseWriter, r *http.Request, body []byte) bool {
	env, perr := decodeEnvelope(body)
	if perr != nil {
		s.reject(ep, w, env.id, perr)
		return true
	}
	if env.response {
		s.legacyResponse(ep, w, r, body, env.id)
		return true
	}
	req := env.req
	var p rawParams
	if req.Params != nil {
		if err := p.decode(req.Params); err != nil {
			s.reject(ep, w, req.ID, invalidParams("Invalid params: malformed params").asStatus(http.StatusBadRequest))
			return true
		}
		if p.Meta != nil && p.Meta.ProtocolVersion != "" {
			return false // modern by its _meta
		}
	}
	if perr := checkLegacyHeaders(ep, r, req, &p); perr != nil {
		s.reject(ep, w, req.ID, perr)
		return true
	}
	if req.Method == mcp.MethodInitialize && !req.IsNotification() {
		ep.legacyInitialize(s, w, r, req)
		return true
	}
	key, present, valid := presentedKey(r.Header)
	if !present {
		s.reject(ep, w, req.ID, errSessionRequired)
		return true
	}
	id, perr := s.admit(ep, r, req.Method, toolName(req.Method, &p))
	if perr != nil {
		s.reject(ep, w, req.ID, perr)
		return true
	}
	if !valid {
		s.reject(ep, w, mcp.ID{}, errSessionNotFound)
		return true
	}
	// The limiter is charged before the store is read, so that guessed
	// session IDs cost the caller tokens; the methods that charge after
	// their target lookup still do (dispatchLegacy).
	if req.IsNotification() || !chargesAfterLookup[req.Method] {
		if perr := s.chargeLegacyLimiter(id); perr != nil {
			s.reject(ep, w, req.ID, perr)
			return true
		}
	}
	cs, perr := s.legacy.sessions.find(r.Context(), key, ep.opts.Name, id)
	if perr != nil {
		if perr == errSessionNotFound {
			s.reject(ep, w, mcp.ID{}, perr)
		} else {
			s.reject(ep, w, req.ID, perr)
		}
		return true
	}
	if req.IsNotification() {
		s.legacyNotification(cs, req, &p)
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	ep.handleLegacy(s, w, r, req, &p, cs, id)
	return true
}

// asStatus returns a copy of pe sent with another HTTP status.
func (pe *protocolError) asStatus(status int) *protocolError {
	c := *pe
	c.status = status
	return &c
}

// checkLegacyHeaders applies the header rules of a legacy POST: a
// MCP-Protocol-Version value must name a known 2025 revision (inside a
// session any of them is accepted, whatever was negotiated; absent means
// the negotiated one), and the 2026 mirrored headers, when a client sends
// them anyway, must agree with the body.
func checkLegacyHeaders(ep *Endpoint, r *http.Request, req *mcp.Request, p *rawParams) *protocolError {
	if hv, present, err := singleHeader(r.Header, mcp.HeaderProtocolVersion); err != nil {
		return headerMismatch("Header mismatch: invalid MCP-Protocol-Version header")
	} else if present && !mcp.IsLegacyVersion(hv) {
		return newProtocolError(http.StatusBadRequest, mcp.UnsupportedVersion(ep.opts.ProtocolVersions, hv))
	}
	if hm, present, err := singleHeader(r.Header, mcp.HeaderMethod); err != nil || present && hm != req.Method {
		return headerMismatch("Header mismatch: Mcp-Method does not match the request method")
	}
	if want, ok := expectedName(req.Method, p); ok {
		if hn, present, err := singleHeader(r.Header, mcp.HeaderName); err != nil {
			return headerMismatch("Header mismatch: invalid Mcp-Name header")
		} else if present {
			if got, err := mcp.DecodeHeaderValue(hn); err != nil || got != want {
				return headerMismatch("Header mismatch: Mcp-Name does not match the request")
			}
		}
	}
	return nil
}

// chargeLegacyLimiter takes one token of the request limiter, if any, for
// a message of a session (request, notification, response, GET or
// DELETE), before its session is looked up.
func (s *Server) chargeLegacyLimiter(id Identity) *protocolError {
	if lim := s.opts.RequestLimiter; lim != nil {
		if ok, wait := lim.Allow(id.rateKey()); !ok {
			return rateLimited(wait)
		}
	}
	return nil
}

// admit runs the admission controller for a legacy message; tool is the
// name a tools/call request calls, else empty.
func (s *Server) admit(ep *Endpoint, r *http.Request, method, tool string) (Identity, *protocolError) {
	id, err := s.opts.Admission.Admit(r.Context(), &AdmissionRequest{
		Endpoint: ep.opts.Name, Method: method, Tool: tool, Header: r.Header, RemoteAddr: r.RemoteAddr,
		HTTPMethod: r.Method, Host: r.Host, Path: r.URL.Path,
	})
	if err != nil {
		var (
			rej *Rejection
			me  *mcp.Error
		)
		if !errors.As(err, &rej) && !errors.As(err, &me) {
			s.logger.Error("admission controller failed", "endpoint", ep.opts.Name, "err", redactErr(err, credentials(r.Header)...))
		}
		return Identity{}, asProtocolError(err)
	}
	return id, nil
}

// legacyNotification acts on a client notification inside a session:
// notifications/cancelled cancels that request if it runs on this node;
// every other notification (notifications/initialized included) is
// accepted and ignored.
func (s *Server) legacyNotification(cs *cachedSession, req *mcp.Request, p *rawParams) {
	if req.Method != mcp.NotificationCancelled || req.Params == nil {
		return
	}
	var cp struct {
		RequestID mcp.ID `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &cp) != nil || cp.RequestID.IsZero() {
		return
	}
	s.legacy.live.release(cs.rec.Key, func(ls *nodeSession) {
		ls.cancelInflightLocked(string(cp.RequestID.Raw()))
	})
}

// refuseLegacyInitialize answers a legacy initialize sent to an endpoint
// that serves no 2025 revision: HTTP 400 with -32022 naming the revisions
// it serves. It returns nil for an initialize whose _meta claims the
// modern era (which the modern pipeline answers -32601).
func refuseLegacyInitialize(ep *Endpoint, req *mcp.Request) *protocolError {
	var ip struct {
		ProtocolVersion string `json:"protocolVersion"`
		Meta            *struct {
			ProtocolVersion *json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if req.Params != nil {
		if json.Unmarshal(req.Params, &ip) == nil && ip.Meta != nil && ip.Meta.ProtocolVersion != nil {
			return nil
		}
	}
	return newProtocolError(http.StatusBadRequest, mcp.UnsupportedVersion(ep.opts.ProtocolVersions, ip.ProtocolVersion))
}

// serveLegacyStream handles GET (the session's standalone SSE stream) and
// DELETE (the end of the session) carrying Mcp-Session-Id; other methods
// are 405.
func (s *Server) serveLegacyStream(ep *Endpoint, w http.ResponseWriter, r *http.Request) {
	abandonBody(w, r)
	if perr := s.checkHostOrigin(r); perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodDelete {
		pe := newProtocolError(http.StatusMethodNotAllowed, mcp.NewError(mcp.CodeInvalidRequest, "Method not allowed"))
		pe.header = http.Header{"Allow": {"GET, POST, DELETE"}}
		s.reject(ep, w, mcp.ID{}, pe)
		return
	}
	if r.Method == http.MethodGet && !acceptsSSE(r.Header.Values("Accept")) {
		s.reject(ep, w, mcp.ID{}, newProtocolError(http.StatusNotAcceptable, mcp.NewError(mcp.CodeInvalidRequest, "Not acceptable: Accept must list text/event-stream")))
		return
	}
	if hv, present, err := singleHeader(r.Header, mcp.HeaderProtocolVersion); err != nil || present && !mcp.IsLegacyVersion(hv) {
		s.reject(ep, w, mcp.ID{}, newProtocolError(http.StatusBadRequest, mcp.UnsupportedVersion(ep.opts.ProtocolVersions, hv)))
		return
	}
	key, _, valid := presentedKey(r.Header)
	id, perr := s.admit(ep, r, "", "")
	if perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	if !valid {
		s.reject(ep, w, mcp.ID{}, errSessionNotFound)
		return
	}
	if perr := s.chargeLegacyLimiter(id); perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	cs, perr := s.legacy.sessions.find(r.Context(), key, ep.opts.Name, id)
	if perr != nil {
		s.reject(ep, w, mcp.ID{}, streamStatus(perr))
		return
	}
	if r.Method == http.MethodDelete {
		if perr := s.legacy.sessions.delete(r.Context(), key); perr != nil {
			s.reject(ep, w, mcp.ID{}, streamStatus(perr))
			return
		}
		running := s.legacy.live.end(key)
		s.legacy.pending.dropSession(key)
		s.legacy.tasks.endSession(key)
		s.awaitCalls(r.Context(), running)
		w.WriteHeader(http.StatusOK)
		return
	}
	if lastID, ok := r.Header[mcp.HeaderLastEventID]; ok {
		s.serveResume(ep, w, r, cs, lastID)
		return
	}
	s.serveGetStream(ep, w, r, cs)
}

// streamStatus gives the fixed internal error, sent with HTTP 200 inside a
// POST's JSON-RPC exchange, HTTP 500 on a GET or DELETE, which have no
// JSON-RPC exchange of their own.
func streamStatus(perr *protocolError) *protocolError {
	if perr == errInternal {
		return perr.asStatus(http.StatusInternalServerError)
	}
	return perr
}

// acceptsSSE reports whether the Accept values admit an SSE response.
func acceptsSSE(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "*/*", "text/event-stream", "text/*":
				return true
			}
		}
	}
	return false
}

// checkLegacyParamHeaders is checkParamHeaders for a 2025-era request:
// 2025 clients send no Mcp-Param headers, so a missing one is fine, but one
// that is sent must agree with the arguments like on the modern path.
func checkLegacyParamHeaders(h http.Header, decls []mcp.ParamHeader, args json.RawMessage) *protocolError {
	var present []mcp.ParamHeader
	for _, d := range decls {
		if _, ok := h[d.Key]; ok {
			present = append(present, d)
		}
	}
	if len(present) == 0 {
		return nil
	}
	return checkParamHeaders(h, present, args)
}

package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/taskwire/taskwire/internal/hostcheck"
	"github.com/taskwire/taskwire/internal/jsonlimit"
	"github.com/taskwire/taskwire/mcp"
)

// rawParams is every params member the pipeline reads, decoded in one pass.
// Members of other methods stay zero; complex members stay raw for the
// method's own decoder.
type rawParams struct {
	Meta           *mcp.RequestMeta   `json:"_meta"`
	Name           string             `json:"name"`
	URI            string             `json:"uri"`
	TaskID         string             `json:"taskId"`
	Arguments      json.RawMessage    `json:"arguments"`
	Cursor         *string            `json:"cursor"`
	InputResponses mcp.InputResponses `json:"inputResponses"`
	RequestState   *string            `json:"requestState"`
	Ref            json.RawMessage    `json:"ref"`
	Argument       json.RawMessage    `json:"argument"`
	Context        json.RawMessage    `json:"context"`
	Notifications  json.RawMessage    `json:"notifications"`
}

// decode reads the params members by exact name; a duplicate name is an
// error, so every reader of the message sees the same values. Raw members
// are copied: data lives in a pooled buffer that is reused once the response
// is written, and handlers may keep what they are given.
func (p *rawParams) decode(data []byte) error {
	return mcp.EachMember(data, func(name, raw []byte) error {
		var err error
		switch string(name) {
		case "_meta":
			if string(raw) != "null" { // null is a missing _meta
				p.Meta = &mcp.RequestMeta{}
				err = p.Meta.UnmarshalJSON(raw)
			}
		case "name":
			p.Name, err = mcp.DecodeString(raw)
		case "uri":
			p.URI, err = mcp.DecodeString(raw)
		case "taskId":
			p.TaskID, err = mcp.DecodeString(raw)
		case "cursor":
			var c string
			c, err = mcp.DecodeString(raw)
			p.Cursor = &c
		case "requestState":
			var s string
			s, err = mcp.DecodeString(raw)
			p.RequestState = &s
		case "inputResponses":
			if string(raw) != "null" {
				err = json.Unmarshal(raw, &p.InputResponses)
			}
		case "arguments":
			p.Arguments = bytes.Clone(raw)
		case "ref":
			p.Ref = bytes.Clone(raw)
		case "argument":
			p.Argument = bytes.Clone(raw)
		case "context":
			p.Context = bytes.Clone(raw)
		case "notifications":
			p.Notifications = bytes.Clone(raw)
		}
		return err
	})
}

// Shared header values; net/http never modifies them.
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
	connClose       = []string{"close"}
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 64<<10 {
		return // let large buffers go
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// serve runs the transport half of the pipeline, steps 1-16 of the
// request pipeline in docs/architecture.md (Host and Origin, method and
// media types, body limits, JSON and envelope, mirrored headers and the
// protocol version), and hands a well-formed request to the endpoint. A
// request of the 2025 era leaves it at the era classifier, after step 8.
func (s *Server) serve(ep *Endpoint, w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = noStore
	if r.Method != http.MethodPost && ep.legacyMethods != nil && !modernByHeader(r.Header) {
		if _, ok := r.Header[mcp.HeaderSessionID]; ok {
			s.serveLegacyStream(ep, w, r)
			return
		}
	}
	if perr := s.checkTransport(r); perr != nil {
		abandonBody(w, r)
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	bp := getBuf()
	body, charged, perr := s.readBody(w, r, (*bp)[:0])
	*bp = body
	held := true // until the body is given back: its buffer and its budget
	defer func() {
		if held {
			s.budget.give(charged)
			putBuf(bp)
		}
	}()
	if perr != nil {
		abandonBody(w, r)
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	if !jsonlimit.Valid(body, s.opts.MaxJSONDepth) {
		if json.Valid(body) { // only the depth limit failed
			s.reject(ep, w, mcp.ID{}, errTooDeep)
		} else {
			s.reject(ep, w, mcp.ID{}, errParse)
		}
		return
	}
	// The era classifier (legacy_transport.go): the header half first, so
	// that a modern request pays one header lookup.
	if ep.legacyMethods != nil && !modernByHeader(r.Header) && s.serveLegacy(ep, w, r, body) {
		return
	}
	req, err := mcp.DecodeValidRequest(body)
	if err != nil {
		var id mcp.ID
		if req != nil {
			id = req.ID
		}
		s.reject(ep, w, id, newProtocolError(http.StatusBadRequest, err.(*mcp.Error)))
		return
	}
	if req.Method == mcp.MethodInitialize && ep.legacyMethods == nil && !modernByHeader(r.Header) {
		if perr := refuseLegacyInitialize(ep, req); perr != nil {
			s.reject(ep, w, req.ID, perr)
			return
		}
	}
	if req.IsNotification() {
		// The 2026-07-28 revision defines no client notifications over HTTP;
		// accept and ignore them as the transport requires.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var p rawParams
	perr = s.checkRequest(ep, r, req, &p)
	if perr != nil {
		s.reject(ep, w, req.ID, perr)
		return
	}
	if req.Method == mcp.MethodSubscriptionsListen {
		// A listen holds its request for as long as its stream is open,
		// but reads nothing of the body after checkRequest: every member
		// it uses was copied out (rawParams.decode, the request ID and
		// method are strings). Give the body back now rather than at the
		// stream's end.
		req.Params = nil
		held = false
		s.budget.give(charged)
		putBuf(bp)
	}
	ep.handle(s, w, r, req, &p)
}

// checkHostOrigin applies the Host and Origin rules.
func (s *Server) checkHostOrigin(r *http.Request) *protocolError {
	if !s.hostAllowed(r.Host) {
		return newProtocolError(http.StatusForbidden, mcp.NewError(mcp.CodeInvalidRequest, "Forbidden: host not allowed"))
	}
	if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin) {
		return newProtocolError(http.StatusForbidden, mcp.NewError(mcp.CodeInvalidRequest, "Forbidden: origin not allowed"))
	}
	return nil
}

// checkTransport applies the Host, Origin, method and media-type rules.
func (s *Server) checkTransport(r *http.Request) *protocolError {
	if perr := s.checkHostOrigin(r); perr != nil {
		return perr
	}
	if r.Method != http.MethodPost {
		pe := newProtocolError(http.StatusMethodNotAllowed, mcp.NewError(mcp.CodeInvalidRequest, "Method not allowed: use POST"))
		pe.header = http.Header{"Allow": {http.MethodPost}}
		return pe
	}
	if !isJSONMediaType(r.Header.Get("Content-Type")) {
		return newProtocolError(http.StatusUnsupportedMediaType, mcp.NewError(mcp.CodeInvalidRequest, "Unsupported media type: use application/json"))
	}
	if !acceptsBoth(r.Header.Values("Accept")) {
		return newProtocolError(http.StatusNotAcceptable, mcp.NewError(mcp.CodeInvalidRequest, "Not acceptable: Accept must list application/json and text/event-stream"))
	}
	return nil
}

// isJSONMediaType reports whether a Content-Type value names
// application/json, with or without parameters such as charset.
func isJSONMediaType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// acceptsBoth reports whether the Accept header values admit both JSON and
// SSE responses. Wildcards count.
func acceptsBoth(values []string) bool {
	var js, sse bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "*/*":
				js, sse = true, true
			case "application/json", "application/*":
				js = true
			case "text/event-stream", "text/*":
				sse = true
			}
		}
	}
	return js && sse
}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostcheck.Name(hostport)
	if s.hosts == nil {
		return hostcheck.IsLoopbackName(host)
	}
	return s.hosts["*"] || s.hosts[host]
}

func (s *Server) originAllowed(origin string) bool {
	if s.origins != nil {
		if s.origins["*"] {
			return true
		}
		n, err := normalOrigin(origin)
		return err == nil && s.origins[n]
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return hostcheck.IsLoopbackName(strings.ToLower(u.Hostname()))
}

// checkRequest validates mirrored headers, the protocol version and the
// required _meta, decoding params into p.
func (s *Server) checkRequest(ep *Endpoint, r *http.Request, req *mcp.Request, p *rawParams) *protocolError {
	hm, present, err := singleHeader(r.Header, mcp.HeaderMethod)
	if err != nil || !present {
		return headerMismatch("Header mismatch: missing or invalid Mcp-Method header")
	}
	if hm != req.Method {
		return headerMismatch("Header mismatch: Mcp-Method does not match the request method")
	}
	hv, present, err := singleHeader(r.Header, mcp.HeaderProtocolVersion)
	if err != nil || !present || hv == "" {
		return headerMismatch("Header mismatch: missing or invalid MCP-Protocol-Version header")
	}
	if perr := decodeMeta(req, p); perr != nil {
		return perr
	}
	if p.Meta.ProtocolVersion != hv {
		return headerMismatch("Header mismatch: MCP-Protocol-Version does not match _meta")
	}
	if perr := ep.checkVersion(hv); perr != nil {
		return perr
	}
	if want, ok := expectedName(req.Method, p); ok {
		hn, present, err := singleHeader(r.Header, mcp.HeaderName)
		if err != nil || !present {
			return headerMismatch("Header mismatch: missing or invalid Mcp-Name header")
		}
		got, err := mcp.DecodeHeaderValue(hn)
		if err != nil || got != want {
			return headerMismatch("Header mismatch: Mcp-Name does not match the request")
		}
	}
	return nil
}

// decodeMeta decodes the params of a modern request into p and checks that
// its _meta names a protocol version and client capabilities: the body
// half of checkRequest, which every transport applies.
func decodeMeta(req *mcp.Request, p *rawParams) *protocolError {
	if req.Params == nil {
		return errMissingMeta
	}
	if err := p.decode(req.Params); err != nil {
		return newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: malformed params"))
	}
	if p.Meta == nil || p.Meta.ProtocolVersion == "" || p.Meta.ClientCapabilities == nil {
		return errMissingMeta
	}
	return nil
}

// checkVersion refuses a modern revision the endpoint does not serve with
// -32022 naming those it does.
func (ep *Endpoint) checkVersion(v string) *protocolError {
	if !ep.supportsVersion(v) {
		supported := ep.modernVersions
		if len(supported) == 0 {
			supported = ep.opts.ProtocolVersions
		}
		return newProtocolError(http.StatusBadRequest, mcp.UnsupportedVersion(supported, v))
	}
	return nil
}

// reject writes a pipeline error and counts it.
func (s *Server) reject(ep *Endpoint, w http.ResponseWriter, id mcp.ID, pe *protocolError) {
	s.opts.Metrics.RequestRejected(ep.opts.Name, pe.status)
	writeError(w, id, pe)
}

// rejectOn sends a pipeline error as the final response of st and counts
// it. Over HTTP, before anything else was written, it sends the same bytes
// as reject.
func (s *Server) rejectOn(ep *Endpoint, st *responseStream, id mcp.ID, pe *protocolError) {
	s.opts.Metrics.RequestRejected(ep.opts.Name, pe.status)
	st.finishError(id, pe)
}

// writeError writes a complete JSON error response.
func writeError(w http.ResponseWriter, id mcp.ID, pe *protocolError) {
	h := w.Header()
	for k, vs := range pe.header {
		h[k] = vs
	}
	bp := getBuf()
	defer putBuf(bp)
	*bp = mcp.AppendError((*bp)[:0], id, pe.err)
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(*bp))}
	w.WriteHeader(pe.status)
	w.Write(*bp)
}

// writeResult writes a complete JSON success response.
func writeResult(w http.ResponseWriter, id mcp.ID, result []byte) {
	bp := getBuf()
	defer putBuf(bp)
	*bp = mcp.AppendResult((*bp)[:0], id, result)
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(*bp))}
	w.WriteHeader(http.StatusOK)
	w.Write(*bp)
}

package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
)

// EndpointOptions describe one MCP endpoint.
type EndpointOptions struct {
	// Path is the exact URL path the endpoint is served at, such as "/mcp".
	// Required; it must start with "/" and be written unescaped, without
	// query or fragment, since requests are matched by their decoded path.
	Path string
	// Name and Version identify the server implementation in server/discover
	// and in every result's _meta. Required. Name is also the endpoint
	// label of metrics and logs: it must be UTF-8 without control
	// characters.
	Name    string
	Version string
	// Title, Description and WebsiteURL are optional display information.
	Title       string
	Description string
	WebsiteURL  string
	// Instructions is natural-language guidance for models, sent in
	// server/discover.
	Instructions string
	// ProtocolVersions lists the protocol revisions the endpoint accepts.
	// Nil means DefaultProtocolVersions: 2025-06-18, 2025-11-25 and
	// 2026-07-28. The 2025 revisions are served with sessions (see
	// Options.Sessions) on the same path; list mcp.LatestProtocolVersion
	// alone for an endpoint without them, which answers a 2025 initialize
	// with HTTP 400 and -32022 naming its versions. server/discover and the
	// modern pipeline's -32022 name the 2026 revisions only.
	ProtocolVersions []string
	// TaskProtocolVersions lists the revisions under which the endpoint serves
	// the Tasks extension. It takes effect only with a task manager. Nil,
	// on an endpoint with tools that create tasks served by a server with
	// a task manager, means mcp.LatestProtocolVersion (the 2025-11-25
	// tasks of sessions are served regardless); an empty, non-nil list
	// serves Tasks under no revision.
	TaskProtocolVersions []string
	// CacheTTL is the ttlMs advertised on server/discover and list results.
	// Zero means the client should not reuse them.
	CacheTTL time.Duration
	// PageSize bounds list results; larger catalogs are paginated with opaque
	// cursors. Zero means 100.
	PageSize int
	// DynamicTools serves tools/list and tools/call, and advertises the
	// tools capability, even when the endpoint has no tool at New, so
	// that tools added while it is served (Endpoint.UpdateTools) are
	// reachable. An endpoint with tools at New serves them regardless.
	DynamicTools bool
}

// DefaultProtocolVersions returns the revisions an endpoint serves when
// EndpointOptions.ProtocolVersions is nil.
func DefaultProtocolVersions() []string {
	return []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125, mcp.LatestProtocolVersion}
}

// Endpoint is one MCP endpoint: a path with its own identity, versions and
// catalog of tools, resources and prompts. Create it with NewEndpoint,
// register everything, then pass it to New. Registration is not safe for
// concurrent use and must finish before New: New freezes the endpoint's
// registrations, and every registration function (AddTool, AddRawTool,
// AddTaskTool, AddRawTaskTool, AddPrompt, SetCompletionHandler,
// AddResource, AddResourceTemplate, SetResourceSource, SetPromptSource)
// panics on an endpoint that already belongs to a server, since the
// server may be serving it concurrently. Problems with a registration made
// in time are reported by New.
//
// What may change while the endpoint is served: its tools, through
// UpdateTools (safe for concurrent use once New has returned), and
// whatever a ResourceSource or PromptSource serves. NotifyListChanged
// announces a change to the clients that asked for it.
type Endpoint struct {
	opts EndpointOptions
	errs []error
	srv  *Server

	tools     []*toolEntry           // registered before New
	toolIndex map[string]*toolEntry  // registered before New, by name
	live      liveTools              // the tools served now (catalog.go)
	served    chan struct{}          // closed once New has built the endpoint
	server    atomic.Pointer[Server] // set once New has built the endpoint

	resources     []*resourceEntry
	resourceIndex map[string]*resourceEntry
	templates     []*templateEntry
	resourceSrc   ResourceSource // nil without SetResourceSource
	promptSrc     PromptSource   // nil without SetPromptSource

	prompts     []*promptEntry
	promptIndex map[string]*promptEntry

	completion CompletionHandler
	tasks      bool        // the endpoint serves the Tasks extension
	extensions []Extension // see AddExtension

	serverInfo     *mcp.Implementation
	serverMeta     mcp.Meta
	serverMetaJSON []byte // serverMeta encoded
	discoverJSON   []byte
	cacheScope     mcp.CacheScope
	methods        map[string]methodFunc

	modernVersions []string // the 2026-era members of ProtocolVersions
	legacyVersions []string // the 2025 revisions served with sessions
	legacyMethods  map[string]methodFunc
	legacyHooks    legacyHooks // filled by the 2025-11-25 tasks layer
}

// NewEndpoint returns an empty endpoint. Invalid options are reported by New.
func NewEndpoint(opts EndpointOptions) *Endpoint {
	if opts.ProtocolVersions == nil {
		opts.ProtocolVersions = DefaultProtocolVersions()
	}
	if opts.PageSize == 0 {
		opts.PageSize = 100
	}
	return &Endpoint{
		opts:          opts,
		toolIndex:     map[string]*toolEntry{},
		resourceIndex: map[string]*resourceEntry{},
		promptIndex:   map[string]*promptEntry{},
		served:        make(chan struct{}),
	}
}

// Path returns the endpoint's path.
func (ep *Endpoint) Path() string { return ep.opts.Path }

func (ep *Endpoint) fail(err error) {
	ep.mustBeOpen()
	ep.errs = append(ep.errs, err)
}

// mustBeOpen panics when ep is already frozen by New: a late registration
// would change an endpoint that is being served.
func (ep *Endpoint) mustBeOpen() {
	if ep.srv != nil {
		panic(fmt.Sprintf("server: registration on endpoint %q after server.New; an endpoint is frozen once its server is built", ep.opts.Path))
	}
}

// supportsVersion reports whether the modern pipeline serves v.
func (ep *Endpoint) supportsVersion(v string) bool {
	return slices.Contains(ep.modernVersions, v)
}

// servesLegacy reports whether the endpoint's options name a 2025 revision
// it serves with sessions.
func (ep *Endpoint) servesLegacy() bool {
	return slices.ContainsFunc(ep.opts.ProtocolVersions, negotiable)
}

// negotiable reports whether a 2025 session may negotiate v.
func negotiable(v string) bool {
	return v == mcp.ProtocolVersion20250618 || v == mcp.ProtocolVersion20251125
}

// matchablePath reports whether path is the decoded path of some request
// target, as net/http parses it and ServeHTTP compares it. A client never
// sends a fragment.
func matchablePath(path string) bool {
	u, err := url.ParseRequestURI(path)
	return err == nil && u.Path == path && u.RawQuery == "" && !u.ForceQuery && !strings.Contains(path, "#")
}

// build freezes the endpoint for s.
func (ep *Endpoint) build(s *Server) error {
	if ep.srv != nil {
		return errors.New("endpoint already belongs to a server")
	}
	o := ep.opts
	switch {
	case !strings.HasPrefix(o.Path, "/"):
		ep.fail(fmt.Errorf("path %q must start with /", o.Path))
	case !matchablePath(o.Path):
		// Requests are routed by their decoded path, which has neither.
		ep.fail(fmt.Errorf("path %q can never match a request: write it unescaped, without query or fragment", o.Path))
	case o.Name == "" || o.Version == "":
		ep.fail(errors.New("name and version are required"))
	case !utf8.ValidString(o.Name) || strings.ContainsFunc(o.Name, unicode.IsControl):
		// The name is a metrics label and is logged: Prometheus refuses
		// (panics on) a label that is not UTF-8.
		ep.fail(errors.New("name must be UTF-8 without control characters"))
	case len(o.ProtocolVersions) == 0:
		ep.fail(errors.New("at least one protocol version is required"))
	case o.PageSize < 0 || o.CacheTTL < 0:
		ep.fail(errors.New("page size and cache TTL must not be negative"))
	}
	ep.modernVersions, ep.legacyVersions = nil, nil
	for _, v := range o.ProtocolVersions {
		switch {
		case v == mcp.LatestProtocolVersion:
			ep.modernVersions = append(ep.modernVersions, v)
		case negotiable(v):
			ep.legacyVersions = append(ep.legacyVersions, v)
		default:
			ep.fail(fmt.Errorf("protocol version %q is not implemented", v))
		}
	}
	if len(ep.legacyVersions) > 0 {
		hooks, err := ep.legacyTaskHooks(s)
		if err != nil {
			ep.fail(err)
		}
		ep.legacyHooks = hooks
	}
	if err := ep.buildTasks(s); err != nil {
		ep.fail(err)
	}
	if err := ep.checkExtensions(); err != nil {
		ep.fail(err)
	}
	if err := errors.Join(ep.errs...); err != nil {
		return err
	}
	ep.srv = s
	ep.serverInfo = &mcp.Implementation{
		Name: o.Name, Version: o.Version, Title: o.Title,
		Description: o.Description, WebsiteURL: o.WebsiteURL,
	}
	ep.serverMeta = mcp.Meta{mcp.MetaServerInfo: ep.serverInfo}
	var err error
	if ep.serverMetaJSON, err = json.Marshal(ep.serverMeta); err != nil {
		return fmt.Errorf("encode server info: %w", err)
	}
	ep.cacheScope = mcp.CachePublic
	if s.opts.CatalogPolicy != nil {
		ep.cacheScope = mcp.CachePrivate
	}
	ep.methods = ep.methodTable()
	ep.addExtensionMethods(ep.methods)
	if len(ep.legacyVersions) > 0 {
		ep.legacyMethods = ep.legacyMethodTable()
	}
	disc, err := json.Marshal(ep.withMeta(&mcp.DiscoverResult{
		SupportedVersions: ep.modernVersions,
		Capabilities:      ep.capabilities(),
		Instructions:      o.Instructions,
		TTLMs:             o.CacheTTL.Milliseconds(),
		CacheScope:        mcp.CachePublic,
	}))
	if err != nil {
		return fmt.Errorf("encode server/discover: %w", err)
	}
	ep.discoverJSON = disc
	ep.live.init(ep.tools)
	ep.server.Store(s)
	close(ep.served)
	return nil
}

// capabilities are what the endpoint advertises; methods of features it
// lacks answer -32601.
func (ep *Endpoint) capabilities() *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{Logging: mcp.Object{}}
	if ep.servesTools() {
		c.Tools = &mcp.ToolsCapability{}
	}
	if ep.servesResources() {
		// Listens honour resourceSubscriptions (listen_resources.go),
		// where the server serves listens at all.
		c.Resources = &mcp.ResourcesCapability{Subscribe: ep.srv.subs != nil}
	}
	if ep.servesPrompts() {
		c.Prompts = &mcp.PromptsCapability{}
	}
	if ep.completion != nil {
		c.Completions = mcp.Object{}
	}
	if ep.tasks {
		c.Extensions = map[string]mcp.Object{mcp.ExtensionTasks: {}}
	}
	c.Extensions = ep.extensionCapabilities(c.Extensions)
	return c
}

// methodFunc runs one method for an admitted request and returns the result
// to encode, the outcome, or a protocol error.
type methodFunc func(ctx context.Context, c *call) (any, Outcome, *protocolError)

func (ep *Endpoint) methodTable() map[string]methodFunc {
	m := map[string]methodFunc{
		mcp.MethodServerDiscover: ep.discover,
	}
	if ep.servesTools() {
		m[mcp.MethodToolsList] = ep.listTools
		m[mcp.MethodToolsCall] = ep.callTool
	}
	if ep.servesResources() {
		m[mcp.MethodResourcesList] = ep.listResources
		m[mcp.MethodResourcesTemplatesList] = ep.listResourceTemplates
		m[mcp.MethodResourcesRead] = ep.readResource
	}
	if ep.servesPrompts() {
		m[mcp.MethodPromptsList] = ep.listPrompts
		m[mcp.MethodPromptsGet] = ep.getPrompt
	}
	if ep.completion != nil {
		m[mcp.MethodCompletionComplete] = ep.complete
	}
	if ep.srv.subs != nil {
		m[mcp.MethodSubscriptionsListen] = ep.listen
	}
	if ep.tasks {
		m[mcp.MethodTasksGet] = ep.getTask
		m[mcp.MethodTasksUpdate] = ep.updateTask
		m[mcp.MethodTasksCancel] = ep.cancelTask
	}
	return m
}

func (ep *Endpoint) discover(context.Context, *call) (any, Outcome, *protocolError) {
	return json.RawMessage(ep.discoverJSON), OutcomeComplete, nil
}

// withMeta returns the result with the server info added to its _meta
// (every 2026-07-28 result is an mcp.MetaCarrier; resultType defaults are
// each result type's own MarshalJSON). It copies rather than modifies the
// value, which may be an application's and shared; any other value is
// returned as is.
func (ep *Endpoint) withMeta(res any) any {
	if _, ok := res.(mcp.MetaCarrier); !ok {
		return res
	}
	v := reflect.ValueOf(res)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return res
	}
	c := reflect.New(v.Type().Elem())
	c.Elem().Set(v.Elem())
	mc := c.Interface().(mcp.MetaCarrier)
	mc.SetMeta(ep.metaWithServerInfo(mc.GetMeta()))
	return mc
}

// metaWithServerInfo returns m with MetaServerInfo added, copying m when it
// has members (an application's _meta stays unmodified) and keeping a
// server info the result already carries.
func (ep *Endpoint) metaWithServerInfo(m mcp.Meta) mcp.Meta {
	if m == nil {
		return ep.serverMeta
	}
	if _, ok := m[mcp.MetaServerInfo]; ok {
		return m
	}
	c := make(mcp.Meta, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	c[mcp.MetaServerInfo] = ep.serverInfo
	return c
}

// page returns the bounds of the page a cursor selects in a list of n items
// and the cursor of the next page ("" when none).
func (ep *Endpoint) page(cursor *string, n int) (lo, hi int, next string, perr *protocolError) {
	if cursor != nil {
		off, ok := decodeCursor(*cursor)
		if !ok || off > n {
			return 0, 0, "", errBadCursor
		}
		lo = off
	}
	hi = min(n, lo+ep.opts.PageSize)
	if hi < n {
		next = encodeCursor(hi)
	}
	return lo, hi, next, nil
}

// pageOf returns the page of entries a cursor selects, mapped to their wire
// values, and the next cursor ("" on the last page).
func pageOf[E, T any](ep *Endpoint, cursor *string, entries []E, wire func(E) T) ([]T, string, *protocolError) {
	lo, hi, next, perr := ep.page(cursor, len(entries))
	if perr != nil {
		return nil, "", perr
	}
	out := make([]T, 0, hi-lo)
	for _, e := range entries[lo:hi] {
		out = append(out, wire(e))
	}
	return out, next, nil
}

const cursorPrefix = "o1:"

func encodeCursor(off int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(off)))
}

func decodeCursor(c string) (int, bool) {
	if len(c) > 64 {
		return 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

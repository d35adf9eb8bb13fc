package server

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
)

// Identity is who an admitted request acts for. The server never logs it or
// uses it as a metric label.
type Identity struct {
	// Principal names the authenticated caller; empty for anonymous callers.
	Principal string
	// Tenant is the authorization partition: tasks and other per-caller state
	// are visible only within the tenant that created them.
	Tenant string
	// RateKey partitions rate limits. Empty means the tenant.
	RateKey string
	// Source names where the request comes from, for a controller whose
	// principals the caller picks freely (DevAdmission): the per-principal
	// caps of 2025-era sessions (SessionOptions.MaxPerPrincipal) and of
	// listens (SubscriptionOptions.MaxPerPrincipal) then also hold per
	// source, anonymous callers included, so that principals rotated from
	// one source share one caller's allowance. Empty means the caps count
	// per principal only. SourceByAddress sets it to the client's address.
	Source string
}

func (id Identity) rateKey() string {
	if id.RateKey != "" {
		return id.RateKey
	}
	return id.Tenant
}

// AdmissionRequest is what an AdmissionController sees of a request. Header
// is the request's header, which the controller must not modify.
type AdmissionRequest struct {
	// Endpoint is the name of the endpoint the request was routed to.
	Endpoint string
	// Method is the JSON-RPC method; empty for a 2025-era message that is
	// not a request (a response, a GET stream or a DELETE of a session).
	Method string
	// Tool is the name of the tool a tools/call request calls (its
	// params.name, which the Mcp-Name header must match when present);
	// empty for every other method.
	Tool string
	// Header is the HTTP request header.
	Header http.Header
	// RemoteAddr is the network address of the client, as net/http reports it.
	RemoteAddr string
	// HTTPMethod, Host and Path are the HTTP request's method, Host header
	// and decoded URL path (no query), for a controller that checks a
	// proof bound to the request, such as a DPoP proof (RFC 9449); empty
	// when the request did not come over HTTP.
	HTTPMethod, Host, Path string
}

// AdmissionController decides who a request acts for. It runs once per
// request, after transport, envelope, header and protocol validation and
// before any lookup, rate limiting or handler.
//
// To refuse a request, return a *Rejection (for example an HTTP 401 with a
// Bearer challenge) or a *mcp.Error (sent as is, HTTP 200 unless its code
// fixes another status). Any other error is logged by type only and sent as
// the fixed internal error.
type AdmissionController interface {
	Admit(ctx context.Context, req *AdmissionRequest) (Identity, error)
}

// AdmissionFunc adapts a function to an AdmissionController.
type AdmissionFunc func(ctx context.Context, req *AdmissionRequest) (Identity, error)

// Admit calls f.
func (f AdmissionFunc) Admit(ctx context.Context, req *AdmissionRequest) (Identity, error) {
	return f(ctx, req)
}

// Rejection refuses a request at admission with its own HTTP status, JSON-RPC
// error and headers. Header should hold only safe values, such as a
// WWW-Authenticate challenge.
type Rejection struct {
	Status int
	Err    *mcp.Error
	Header http.Header
}

// Error describes the rejection; it is safe on a Rejection without Err.
func (r *Rejection) Error() string {
	if r.Err == nil {
		return "server: request rejected with HTTP " + strconv.Itoa(r.status())
	}
	return "server: request rejected: " + r.Err.Message
}

// status is the rejection's HTTP status: Status, or 403 when unset.
func (r *Rejection) status() int {
	if r.Status == 0 {
		return http.StatusForbidden
	}
	return r.Status
}

func (r *Rejection) protocolError() *protocolError {
	status := r.status()
	e := r.Err
	if e == nil {
		e = mcp.NewError(mcp.CodeInvalidRequest, "Request rejected")
	}
	return &protocolError{status: status, err: e, header: r.Header}
}

// AnonymousTenant is the tenant of requests admitted without credentials.
const AnonymousTenant = "anonymous"

// admitAll is the default controller: everyone is the anonymous tenant.
type admitAll struct{}

func (admitAll) Admit(context.Context, *AdmissionRequest) (Identity, error) {
	return Identity{Tenant: AnonymousTenant}, nil
}

// MaxDevPrincipalBytes bounds the Bearer names DevAdmission accepts.
const MaxDevPrincipalBytes = 256

// DevAdmission returns a controller for development and tests only: a request
// with "Authorization: Bearer NAME" acts as principal and tenant NAME, and a
// request without the header is the anonymous tenant. It checks nothing; never
// use it where tokens matter. The scheme is case-insensitive, as in every HTTP
// authentication scheme. A malformed Authorization header (another scheme, an
// empty name, a name that is longer than MaxDevPrincipalBytes, is not valid
// UTF-8 or holds a control character such as NUL, or more than one
// Authorization header) is rejected with HTTP 401 and a Bearer challenge, the
// same response for every cause.
func DevAdmission() AdmissionController {
	return AdmissionFunc(func(_ context.Context, req *AdmissionRequest) (Identity, error) {
		values := req.Header.Values("Authorization")
		if len(values) == 0 {
			return Identity{Tenant: AnonymousTenant}, nil
		}
		name, ok := devBearerName(values)
		if !ok {
			h := http.Header{}
			h.Set("WWW-Authenticate", `Bearer realm="mcp"`)
			return Identity{}, &Rejection{
				Status: http.StatusUnauthorized,
				Err:    mcp.NewError(mcp.CodeInvalidRequest, "Unauthorized"),
				Header: h,
			}
		}
		return Identity{Principal: name, Tenant: name}, nil
	})
}

// devBearerName returns the name of the only Authorization header value,
// "Bearer NAME" with the scheme in any case, when it is acceptable.
func devBearerName(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, name, ok := strings.Cut(strings.TrimLeft(values[0], " \t"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	name = strings.Trim(name, " \t")
	if name == "" || len(name) > MaxDevPrincipalBytes || !utf8.ValidString(name) {
		return "", false
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "", false
		}
	}
	return name, true
}

// SourceByAddress returns a controller that admits as a does and sets the
// Identity.Source of every admitted request to the client's address: its
// IPv4 address, or the /64 prefix of its IPv6 address (what one host is
// usually given), as ConnLimits.PerAddr counts it. A request whose
// RemoteAddr is not an IP address and port keeps the Source a gave it.
//
// Use it where the peer is the client, as with DevAdmission on a
// development node: behind a reverse proxy every request would come from
// the proxy's address, and its caps would hold for every client together.
func SourceByAddress(a AdmissionController) AdmissionController {
	return AdmissionFunc(func(ctx context.Context, req *AdmissionRequest) (Identity, error) {
		id, err := a.Admit(ctx, req)
		if err != nil {
			return id, err
		}
		if ap, perr := netip.ParseAddrPort(req.RemoteAddr); perr == nil {
			if src := clientPrefix(ap.Addr()); src.IsValid() {
				id.Source = src.String()
			}
		}
		return id, nil
	})
}

// toolName is AdmissionRequest.Tool for a request: the called tool's name
// for tools/call, else empty.
func toolName(method string, p *rawParams) string {
	if method != mcp.MethodToolsCall || p == nil {
		return ""
	}
	return p.Name
}

// Package oauth makes an MCP server an OAuth 2.1 resource server: a
// server.AdmissionController that admits a request only with a valid
// access token for this resource, and the RFC 9728 Protected Resource
// Metadata that tells clients where to get one.
//
// Build a ResourceServer with New, pass it as server.Options.Admission and
// serve its metadata next to the MCP handler with WithMetadata:
//
//	rs, err := oauth.New(oauth.Options{
//		Resource: "https://mcp.example.com/mcp",
//		Issuer:   "https://id.example.com",
//		JWKSURL:  "https://id.example.com/jwks",
//	})
//	if err != nil { ... }
//	srv, err := server.New(server.Options{Endpoints: eps, Admission: rs})
//	if err != nil { ... }
//	http.ListenAndServe(addr, rs.WithMetadata(srv))
//
// # Tokens
//
// A request carries its token in one Authorization header, "Bearer TOKEN"
// (bearer_methods_supported is ["header"]). A token longer than
// Options.MaxTokenBytes is refused before it is parsed. A JWT access token
// is verified with a key from the issuer's JWKS (fetched on first use,
// refreshed after Options.KeysMaxAge and, rate-limited, on an unknown
// "kid"), with an algorithm from Options.Algorithms (never "none"; HMAC
// only with an explicit Options.HMACSecret), an "iss" exactly equal to
// Options.Issuer, an "aud" that contains one of Options.Audiences (by
// default the resource itself, RFC 8707), a required "exp" and an optional
// "nbf" checked with Options.Leeway, and a non-empty "sub". With
// Options.Introspection, tokens that are not JWTs (or every token, when
// neither Options.JWKSURL nor Options.HMACSecret is set) are checked with
// the authorization server's RFC 7662 introspection endpoint instead, one
// at a time per token and at most Introspection.MaxConcurrent at once,
// and the answers, admitting or not, are cached.
//
// A JWKS refresh or an introspection runs in a goroutine the
// ResourceServer owns, bounded by Options.FetchTimeout; stale keys serve
// while a refresh runs, and only a token with an unknown "kid" waits for
// one. A failed or hung fetch or introspection does not poison the
// caches: the next is tried one second later, then two, four, and every
// five at most, and meanwhile a token that cannot be checked gets HTTP 503
// with Retry-After, not invalid_token (see ErrUnavailable). Close ends
// them.
//
// # DPoP
//
// Options.DPoP accepts DPoP-bound tokens (RFC 9449): "Authorization: DPoP
// TOKEN" with a proof in a DPoP header, checked before the token (typ,
// algorithm, public jwk, htm, htu, iat, ath, a server nonce when
// DPoP.RequireNonce), and a token whose cnf.jkt is the proof's key
// thumbprint; a proof is accepted once (a replay cache bounded in size and
// time). DPoPAllowed (the default) accepts bearer tokens too,
// DPoPRequired refuses them, DPoPOff refuses the DPoP scheme. A token
// bound to a key is never accepted as a bearer token.
//
// # Challenges
//
// A request without a token gets HTTP 401 with
//
//	WWW-Authenticate: Bearer resource_metadata="URL"
//
// and a request whose token is refused gets the same challenge with
// error="invalid_token". A valid token that lacks a required scope gets
// HTTP 403 with error="insufficient_scope", scope="the scopes the request
// needs" and resource_metadata. A token that cannot be checked because the
// authorization server did not answer gets HTTP 503 with Retry-After and
// no challenge. A challenge carries scope="…" whenever the
// request needs scopes, so that a client can ask for them at once.
//
// # Scopes
//
// Options.MethodScopes and Options.ToolScopes name the scopes requests
// need. A request needs every scope listed for its JSON-RPC method and, for
// tools/call, every scope listed for the called tool; a request for which
// nothing is listed needs no scope. The token's scopes are the
// space-separated "scope" claim and the "scp" claim (an array of strings or
// a space-separated string) together. Requests about an existing task
// (tasks/get, tasks/update, tasks/cancel) are matched by method only: the
// tool that created the task is not known before the task is looked up.
//
// # Identity
//
// An admitted request acts for principal ISSUER#SUBJECT: the configured
// issuer (which may not contain "#"), "#", and the token's "sub". Two
// issuers never yield the same principal, and a subject cannot pose as
// another issuer's. The tenant, which partitions tasks and sessions, is
// the principal unless Options.TenantClaim names a string claim to take it
// from; the rate key is the principal.
//
// # What is logged
//
// Tokens are never logged, stored, or passed on to another service (an
// introspection request sends the token to the issuer's own endpoint, and
// its cache is keyed by the token's SHA-256). A refused token is logged at
// Info level with only its category (see Category), never its claims.
package oauth

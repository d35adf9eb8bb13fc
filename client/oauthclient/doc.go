// Package oauthclient is the client side of MCP authorization (OAuth 2.1):
// it obtains, stores, refreshes and steps up the access token a client
// sends to one MCP server.
//
// An [Authorizer] is made for one server URL. On a 401 it discovers the
// server's Protected Resource Metadata (RFC 9728: the challenge's
// resource_metadata URL, then the path-inserted well-known URL, then the
// root one), checks that the metadata's resource covers the server URL,
// fetches the authorization server's metadata (RFC 8414 with path insertion,
// then OpenID discovery) and checks that its issuer is exactly the one it
// was fetched for. It registers the client (a pre-registered client ID, a
// Client ID Metadata Document URL when the authorization server supports
// them, or RFC 7591 dynamic registration), runs the authorization code
// flow with PKCE S256 and a loopback redirect (127.0.0.1, a random port, a
// state check, a bounded wait, the RFC 9207 iss check), and sends the
// RFC 8707 resource parameter on the authorization, token and refresh
// requests. On a 403 with error="insufficient_scope" it authorizes again
// with the union of the scopes it had and the scopes the challenge names.
//
// A server that publishes no resource metadata is taken for a 2025-03-26
// server: the authorization server is its origin, with its metadata at the
// root or, failing that, the default /authorize, /token and /register.
//
// Machines, with no user to send to a browser, set Options.Grant instead:
// [ClientCredentials] (client_secret_basic, client_secret_post or
// private_key_jwt with Options.ClientKey), [JWTBearer] for workload
// identity (the platform's token read by [AssertionFile] or
// [AssertionCommand] at every token request), or
// [EnterpriseAuthorization] (an RFC 8693 exchange of the user's ID token
// at the enterprise IdP for an ID-JAG, then the JWT bearer grant). The
// grant runs again when its token expires; no refresh token is kept.
//
// The Authorizer is an http.RoundTripper (put it in client.Options.Transport)
// that attaches the token and, after obtaining a new one, retries a request
// once; its Token method fits client.Options.Token for callers that only
// want the stored token. Tokens and client registrations live in a [Store];
// [FileStore] keeps one file per server in the user's configuration
// directory, mode 0600. Tokens are never logged.
//
// Every exchange is bounded: each HTTP request by Options.Timeout, each
// response body by Options.MaxBodyBytes, the wait for the redirect by
// Options.RedirectTimeout, and step-up by one re-authorization per request.
// Metadata and OAuth endpoints must use https unless their host is a
// loopback address.
package oauthclient

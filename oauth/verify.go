package oauth

import (
	"context"
	"slices"
)

// Grant is what a verified access token grants its bearer.
type Grant struct {
	// Principal is the caller, ISSUER#SUBJECT, as Admit names it.
	Principal string
	// Scopes are the scopes the token grants.
	Scopes []string
}

// HasScope reports whether the grant holds scope.
func (g Grant) HasScope(scope string) bool { return slices.Contains(g.Scopes, scope) }

// Verify checks the value of one Authorization header, "Bearer TOKEN",
// exactly as Admit checks a request's bearer token (a token bound to a
// DPoP key is refused: Verify has no request to check a proof against), and returns what the token
// grants, without requiring any scope: the caller decides what the scopes
// allow. It fails for a missing, malformed, oversized or refused token;
// the error says only the category (which Verify logs, and nothing else
// about the token), never the token or its claims.
func (rs *ResourceServer) Verify(ctx context.Context, authorization string) (Grant, error) {
	if authorization == "" {
		rs.log(ctx, CategoryMissing)
		return Grant{}, refuse(CategoryMissing, nil)
	}
	tok, dpop, terr := credential([]string{authorization}, rs.opts.MaxTokenBytes)
	if terr == nil && dpop {
		terr = refuse(CategoryMalformed, nil) // no request to check a proof against
	}
	var c claims
	if terr == nil {
		c, terr = rs.verify(ctx, tok)
	}
	if terr == nil && c.jkt != "" {
		terr = refuse(CategoryDPoPUnproven, nil)
	}
	if terr != nil {
		rs.log(ctx, terr.category)
		return Grant{}, terr
	}
	return Grant{Principal: rs.opts.Issuer + "#" + c.subject, Scopes: slices.Clone(c.scopes)}, nil
}

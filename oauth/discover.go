package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DiscoverJWKS returns the jwks_uri of an authorization server from its
// metadata: OpenID Connect discovery (ISSUER/.well-known/openid-configuration)
// first, then RFC 8414 (/.well-known/oauth-authorization-server inserted
// before the issuer's path). A document counts only if its "issuer" equals
// issuer exactly. The whole discovery, every document fetched, is bounded
// by timeout, and each response by MaxResponseBytes; when the deadline
// passes the error wraps context.DeadlineExceeded. A nil client is the
// default of Options.HTTPClient.
func DiscoverJWKS(ctx context.Context, client *http.Client, issuer string, timeout time.Duration) (string, error) {
	if err := checkIssuer(issuer); err != nil {
		return "", fmt.Errorf("oauth: discover: issuer %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if client == nil {
		client = newHTTPClient()
	}
	u, _ := url.Parse(issuer)
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	candidates := []string{
		strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration",
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
	}
	var errs []error
	for _, c := range candidates {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%s: not fetched: %w", c, context.Cause(ctx)))
			break
		}
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, client, timeout, c, &doc); err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case doc.Issuer != issuer:
			errs = append(errs, fmt.Errorf("%s names issuer %q", c, doc.Issuer))
		case doc.JWKSURI == "":
			errs = append(errs, fmt.Errorf("%s has no jwks_uri", c))
		default:
			if err := checkFetchURL(doc.JWKSURI); err != nil {
				errs = append(errs, fmt.Errorf("%s: jwks_uri %w", c, err))
				continue
			}
			return doc.JWKSURI, nil
		}
	}
	return "", fmt.Errorf("oauth: discover the signing keys of %s: %w", issuer, errors.Join(errs...))
}

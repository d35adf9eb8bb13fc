package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/taskwire/taskwire/client/oauthclient"
)

// machineContext is the MCP_CONFORMANCE_CONTEXT of the machine-to-machine
// scenarios.
type machineContext struct {
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	PrivateKeyPEM string `json:"private_key_pem"`
	// auth/wif-jwt-bearer: the workload's identity token.
	ValidJWT string `json:"valid_jwt"`
	// auth/enterprise-managed-authorization: the user's ID token at the IdP.
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
}

// machineOptions turns o into the options of a machine-to-machine
// scenario, the way a deployment would configure them: the secret and the
// key as given, the workload and ID tokens read from files (as platforms
// mount them); cleanup removes those files. Other scenarios leave o alone.
func machineOptions(scenario, data string, o *oauthclient.Options) (cleanup func(), err error) {
	cleanup = func() {}
	var mc machineContext
	switch scenario {
	case "auth/client-credentials-basic", "auth/client-credentials-jwt",
		"auth/wif-jwt-bearer", "auth/enterprise-managed-authorization":
		if err := json.Unmarshal([]byte(data), &mc); err != nil {
			return cleanup, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	default:
		return cleanup, nil
	}
	dir, err := os.MkdirTemp("", "taskwire-conformance-")
	if err != nil {
		return cleanup, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	o.OpenURL, o.ClientIDMetadataURL = nil, ""
	o.ClientID, o.ClientSecret = mc.ClientID, mc.ClientSecret
	switch scenario {
	case "auth/client-credentials-basic":
		o.Grant = &oauthclient.ClientCredentials{}
	case "auth/client-credentials-jwt":
		key, err := oauthclient.ParsePrivateKey([]byte(mc.PrivateKeyPEM))
		if err != nil {
			return cleanup, err
		}
		o.ClientKey = key
		o.Grant = &oauthclient.ClientCredentials{}
	case "auth/wif-jwt-bearer":
		path := filepath.Join(dir, "workload-token")
		if err := os.WriteFile(path, []byte(mc.ValidJWT+"\n"), 0o600); err != nil {
			return cleanup, err
		}
		o.Grant = &oauthclient.JWTBearer{Assertion: oauthclient.AssertionFile(path)}
	case "auth/enterprise-managed-authorization":
		path := filepath.Join(dir, "id-token")
		if err := os.WriteFile(path, []byte(mc.IdPIDToken+"\n"), 0o600); err != nil {
			return cleanup, err
		}
		o.Grant = &oauthclient.EnterpriseAuthorization{
			IdPTokenURL: mc.IdPTokenEndpoint, IdPClientID: mc.IdPClientID,
			IDToken: oauthclient.AssertionFile(path),
		}
	}
	return cleanup, nil
}

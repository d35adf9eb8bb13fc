package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/taskwire/taskwire/client/oauthclient"
)

// The machine flows of `taskwire login`: client credentials, the JWT
// bearer grant with a workload identity token, and enterprise-managed
// authorization. Secrets come from files or the environment only.

// maxSecretFile bounds a secret, key or token file.
const maxSecretFile = 64 << 10

// refuseSecretFlags refuses a secret given as a flag value (--client-secret
// S, as earlier versions took it): other users see it in the process list.
func refuseSecretFlags(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "client-secret" || name == "idp-client-secret") {
			return usageErrorf("login: --%s: secrets are not taken on the command line, where other users can see them; "+
				"use --client-secret-file, $TASKWIRE_CLIENT_SECRET or $TASKWIRE_IDP_CLIENT_SECRET", name)
		}
	}
	return nil
}

// machineFlags are login's flags for the machine flows.
type machineFlags struct {
	clientCredentials                     *bool
	secretFile, keyFile, keyID            *string
	assertionFile, assertionCommand       *string
	idpTokenURL, idpClientID, idTokenFile *string
}

func addMachineFlags(fs *flag.FlagSet) *machineFlags {
	return &machineFlags{
		clientCredentials: fs.Bool("client-credentials", false, "log in as the client itself, with no user or browser "+
			"(OAuth client credentials): needs --client-id and a secret ($TASKWIRE_CLIENT_SECRET or --client-secret-file) "+
			"or --client-key-file"),
		secretFile: fs.String("client-secret-file", "", "read the client's secret from `FILE`"),
		keyFile: fs.String("client-key-file", "", "authenticate the client with the PEM private key in `FILE` "+
			"(private_key_jwt: ECDSA, RSA or Ed25519) instead of a secret"),
		keyID: fs.String("client-key-id", "", "the key's `kid`, when the authorization server wants one"),
		assertionFile: fs.String("assertion-file", "", "log in with the workload identity token in `FILE` "+
			"(RFC 7523 JWT bearer grant), read again at every token request"),
		assertionCommand: fs.String("assertion-command", "", "log in with the workload identity token that `COMMAND` prints "+
			"(split at spaces, run without a shell)"),
		idpTokenURL: fs.String("idp-token-url", "", "enterprise-managed authorization: exchange the user's ID token at "+
			"this identity provider token endpoint `URL` for an ID-JAG (needs --idp-client-id, --id-token-file, --client-id "+
			"and the client's secret or key; $TASKWIRE_IDP_CLIENT_SECRET authenticates at the IdP)"),
		idpClientID: fs.String("idp-client-id", "", "this client's `ID` at the identity provider"),
		idTokenFile: fs.String("id-token-file", "", "the user's ID token from the identity provider, in `FILE`"),
	}
}

// machine reports whether a machine flow was asked for.
func (m *machineFlags) machine() bool {
	return *m.clientCredentials || *m.assertionFile != "" || *m.assertionCommand != "" || *m.idpTokenURL != ""
}

// readSecretFile reads a small file and drops surrounding white space.
func readSecretFile(flagName, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("login: --%s: %w", flagName, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("login: --%s: %w", flagName, err)
	}
	if len(data) > maxSecretFile {
		return "", fmt.Errorf("login: --%s: the file is larger than %d bytes", flagName, maxSecretFile)
	}
	s := string(bytes.TrimSpace(data))
	if s == "" {
		return "", fmt.Errorf("login: --%s: the file is empty", flagName)
	}
	return s, nil
}

// clientSecret is the client's secret: --client-secret-file, else
// $TASKWIRE_CLIENT_SECRET; empty when neither is given.
func (m *machineFlags) clientSecret(getenv func(string) string) (string, error) {
	if *m.secretFile != "" {
		return readSecretFile("client-secret-file", *m.secretFile)
	}
	return getenv("TASKWIRE_CLIENT_SECRET"), nil
}

// apply puts the machine flow the flags name into o (whose ClientID and
// ClientSecret are set); it reports every usage problem at once.
func (m *machineFlags) apply(o *oauthclient.Options, getenv func(string) string) error {
	var problems []string
	modes := 0
	for _, on := range []bool{*m.clientCredentials, *m.assertionFile != "" || *m.assertionCommand != "", *m.idpTokenURL != ""} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		problems = append(problems, "--client-credentials, --assertion-file/--assertion-command and --idp-token-url exclude each other")
	}
	if *m.assertionFile != "" && *m.assertionCommand != "" {
		problems = append(problems, "--assertion-file and --assertion-command exclude each other")
	}
	if *m.keyFile != "" {
		pem, err := readSecretFile("client-key-file", *m.keyFile)
		if err != nil {
			return err
		}
		if o.ClientKey, err = oauthclient.ParsePrivateKey([]byte(pem)); err != nil {
			return fmt.Errorf("login: --client-key-file: %w", err)
		}
		o.ClientKeyID = *m.keyID
	}
	if (*m.keyFile != "" || *m.clientCredentials || *m.idpTokenURL != "") && o.ClientID == "" {
		problems = append(problems, "--client-credentials, --client-key-file and --idp-token-url need --client-id")
	}
	if *m.keyFile != "" && o.ClientSecret != "" {
		problems = append(problems, "--client-key-file excludes a client secret")
	}
	if *m.clientCredentials && o.ClientSecret == "" && *m.keyFile == "" {
		problems = append(problems, "--client-credentials needs $TASKWIRE_CLIENT_SECRET, --client-secret-file or --client-key-file")
	}
	switch {
	case *m.clientCredentials:
		o.Grant = &oauthclient.ClientCredentials{}
	case *m.assertionFile != "":
		o.Grant = &oauthclient.JWTBearer{Assertion: oauthclient.AssertionFile(*m.assertionFile)}
	case *m.assertionCommand != "":
		argv := strings.Fields(*m.assertionCommand)
		o.Grant = &oauthclient.JWTBearer{Assertion: oauthclient.AssertionCommand(argv[0], argv[1:]...)}
	case *m.idpTokenURL != "":
		if *m.idpClientID == "" || *m.idTokenFile == "" {
			problems = append(problems, "--idp-token-url needs --idp-client-id and --id-token-file")
		}
		o.Grant = &oauthclient.EnterpriseAuthorization{
			IdPTokenURL: *m.idpTokenURL, IdPClientID: *m.idpClientID, IdPClientSecret: getenv("TASKWIRE_IDP_CLIENT_SECRET"),
			IDToken: oauthclient.AssertionFile(*m.idTokenFile),
		}
	}
	if len(problems) > 0 {
		return usageErrorf("login: %s", strings.Join(problems, "; "))
	}
	return nil
}

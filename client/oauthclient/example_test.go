package oauthclient_test

import (
	"context"
	"fmt"
	"log"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
)

// ExampleNew authorizes a client on its first 401: the Authorizer is the
// client's transport, shows the user the authorization URL, waits for the
// browser's redirect to 127.0.0.1 and keeps the token in the user's
// configuration directory.
func ExampleNew() {
	store, err := oauthclient.DefaultFileStore()
	if err != nil {
		log.Fatal(err)
	}
	url := "https://mcp.example.com/mcp"
	az, err := oauthclient.New(url, oauthclient.Options{
		Store: store,
		OpenURL: func(_ context.Context, authURL string) error {
			fmt.Println("Open this URL to authorize:", authURL)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(url, client.Options{Transport: az})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// c.Connect, c.Call, ...: a 401 runs the flow, a 403 insufficient_scope
	// steps up, and the request is retried once with the new token.
}

// ExampleStored sends the token `taskwire login` stored for a server, and
// nothing when there is none.
func ExampleStored() {
	store, err := oauthclient.DefaultFileStore()
	if err != nil {
		log.Fatal(err)
	}
	url := "https://mcp.example.com/mcp"
	az, err := oauthclient.Stored(store, url)
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(url, client.Options{Transport: az})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

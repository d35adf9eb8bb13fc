package backend

import "context"

// AnswerRelayer is an optional extension of Store for stores that can
// relay answers between the nodes of a fleet: the answer of a 2025-era
// client to a server-to-client request (an elicitation, say) that reaches
// another node than the one holding the call is forwarded through the
// store to that node. store/postgres implements it; a single-process
// store (store/sqlite) does not need to. A program asserts this interface,
// never a concrete store type.
type AnswerRelayer interface {
	// NewAnswerRelay returns the store's relay, for
	// server.Options.AnswerRelay. A store has at most one relay at a time;
	// the caller closes it before the store. It fails when the database
	// does not answer within the store's timeout.
	NewAnswerRelay(ctx context.Context) (AnswerRelay, error)
}

// AnswerRelay forwards encoded JSON-RPC responses between nodes. It has
// the methods of server.AnswerRelay, and Close.
type AnswerRelay interface {
	// Forward delivers one encoded response to node.
	Forward(ctx context.Context, node string, response []byte) error
	// Receive registers fn for the responses forwarded to node and
	// returns stop.
	Receive(node string, fn func(response []byte)) (stop func(), err error)
	// Close stops the relay; its receivers get nothing more.
	Close() error
}

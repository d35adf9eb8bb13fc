// Package mcp is the wire vocabulary of the Model Context Protocol, revision
// 2026-07-28, and of its Tasks extension (io.modelcontextprotocol/tasks).
//
// It holds pure data types and their JSON encodings: the JSON-RPC 2.0
// envelope, the per-request _meta keys, capability objects, tools, content
// blocks, resources, prompts, completion, input requests (MRTR), subscriptions,
// error codes and the Tasks extension types. It also holds the vocabulary of
// the Streamable HTTP transport that both sides share: the header names
// ([HeaderMethod], [HeaderName] and the others), the codec of mirrored
// header values ([EncodeHeaderValue], [DecodeHeaderValue]) and the rules of
// x-mcp-header declarations ([ParseParamHeaders], [ParamHeader]). Results
// and params carry their _meta through an embedded accessor ([MetaCarrier],
// [RequestMetaCarrier]). It performs no I/O and starts no goroutines;
// transports live in other packages.
//
// Every type here decodes the official example messages of the revision and
// re-encodes them to equal JSON; the package tests pin that with golden files.
package mcp

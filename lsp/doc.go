// Package lsp speaks the Language Server Protocol on behalf of an
// editor-independent engine (see Engine). It is the only package that
// imports go.lsp.dev/protocol and go.lsp.dev/jsonrpc2, and it works around
// their known gaps: it frames the stream itself so that malformed input is
// answered instead of ending the connection, cancels requests by numeric
// or string id, runs requests concurrently while applying document changes
// in order, recovers from panics per request, and converts every position
// between UTF-16 code units and UTF-8 byte columns in one place (Mapper).
package lsp

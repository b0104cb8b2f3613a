package lsp

import (
	"errors"
	"fmt"

	"go.lsp.dev/jsonrpc2"
)

// codeRequestCancelled is LSP's RequestCancelled error code, which
// jsonrpc2 v0.10.0 does not define.
const codeRequestCancelled jsonrpc2.Code = -32800

func invalidParams(format string, args ...any) *jsonrpc2.Error {
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, format, args...)
}

// replyError turns an error from a handler into the JSON-RPC error sent
// to the client. Errors that already carry a code keep it; an error after
// the client cancelled the request becomes RequestCancelled; anything else
// is an InternalError carrying the message.
func replyError(err error, clientCancelled bool) error {
	if err == nil {
		return nil
	}
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	if clientCancelled {
		return jsonrpc2.Errorf(codeRequestCancelled, "request cancelled")
	}
	return jsonrpc2.Errorf(jsonrpc2.InternalError, "%s", err.Error())
}

// panicError is the reply to a request whose handler panicked.
func panicError(method string, v any) *jsonrpc2.Error {
	return jsonrpc2.Errorf(jsonrpc2.InternalError, "internal error in %s: %s", method, fmt.Sprint(v))
}

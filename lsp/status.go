package lsp

import (
	"context"

	"github.com/torchlsp/torchlsp/server"
)

// statusMethod is torchlsp's own notification for editors' status bars.
const statusMethod = "torchlsp/status"

// Status tells the editor a target's state (torchlsp/status), when the
// client announced that it handles the method: a client that does not
// know it may treat it as an error (eglot's strict mode does).
func (c *Client) Status(ctx context.Context, s server.Status) {
	if c.capabilities().status {
		_ = c.notify(ctx, statusMethod, s)
	}
}

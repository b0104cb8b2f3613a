package lsp

import (
	"context"

	"github.com/torchlsp/torchlsp/server"
)

// statusMethod is torchlsp's own notification for editors' status bars.
const statusMethod = "torchlsp/status"

// Status tells the editor a target's state (torchlsp/status). Clients that
// do not know the method ignore it, as the spec asks of notifications.
func (c *Client) Status(ctx context.Context, s server.Status) {
	_ = c.notify(ctx, statusMethod, s)
}

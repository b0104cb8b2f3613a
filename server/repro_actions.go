package server

import "context"

// reproActions offers "Run threaded repro" on torch.compile calls.
func (e *Engine) reproActions(uri string, d *document, rng Range, c *checked, only []string) []CodeAction {
	return nil
}

func (e *Engine) reproCommand(ctx context.Context, args commandArgs) (any, error) {
	return nil, context.Canceled
}

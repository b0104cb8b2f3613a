package lsp

import (
	"time"

	"go.uber.org/zap"
)

// watchClient ends the server when the client's process dies, so an
// editor that crashed does not leave the server (and its remote helpers)
// running.
func (s *lspServer) watchClient(pid int) {
	if !processAlive(pid) {
		s.log.Warn("client process not found at initialize; not watching it", zap.Int("pid", pid))
		return
	}
	s.requests.Add(1)
	go func() {
		defer s.requests.Done()
		t := time.NewTicker(s.opts.ClientPollInterval)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
				if !processAlive(pid) {
					s.log.Warn("client process exited; ending", zap.Int("pid", pid))
					close(s.clientGone)
					return
				}
			}
		}
	}()
}

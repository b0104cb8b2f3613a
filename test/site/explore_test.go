package site

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestExplore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	settings := map[string]any{"python": map[string]any{"pythonPath": "/tmp/sx/venv/bin/python", "analysis": map[string]any{"extraPaths": []string{"/tmp/sx/site"}}}}
	s := startServer(t, ctx, []string{"unshare", "--net", "--", "node", "/var/cache/torchlsp-pyright/node_modules/pyright/langserver.index.js", "--stdio"}, append(os.Environ()), "/tmp/sx/ws", settings)
	s.open("/tmp/sx/ws/train.py", "python")
	start := time.Now()
	locs, err := s.definition(ctx, "/tmp/sx/ws/train.py", 12, 6)
	t.Log(time.Since(start), locs, err)
	locs, err = s.definition(ctx, "/tmp/sx/ws/train.py", 14, 16)
	t.Log(locs, err)
	labels, err := s.completion(ctx, "/tmp/sx/ws/train.py", 16, 20)
	t.Log(len(labels), labels[:10], err)
	t.Log(s.logTail())
}

package lsp_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// serveEnv makes the test binary a language server on its stdio, so the
// process-level contract (stdio, exit codes) is tested on a real process.
const serveEnv = "TORCHLSP_LSP_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		log, err := lsp.NewStderrLogger("warn")
		if err != nil {
			log = zap.NewNop()
		}
		code, err := lsp.Serve(context.Background(), lsp.Stdio(), newTestEngine(), lsp.Options{Logger: log, Version: "subprocess"})
		if err != nil {
			log.Error("serve", zap.Error(err))
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestSubprocessExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		shutdown bool
		want     int
	}{
		{"shutdown then exit", true, 0},
		{"exit alone", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), serveEnv+"=1")
			cmd.Stderr = os.Stderr
			p, err := lsptest.StartProcess(cmd, lsptest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			res, err := p.Handshake(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.ServerInfo == nil || res.ServerInfo.Version != "subprocess" {
				t.Errorf("serverInfo = %+v", res.ServerInfo)
			}
			p.DidOpen("file:///a.py", "python", "import torch")
			if h, err := p.Hover(ctx, "file:///a.py", 0, 8); err != nil || h == nil || h.Contents.Value != "`torch` v1" {
				t.Fatalf("hover = %+v, %v", h, err)
			}
			if tt.shutdown {
				if err := p.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Exit(); err != nil {
				t.Fatal(err)
			}
			code, err := p.Wait()
			if err != nil || code != tt.want {
				t.Errorf("exit code = %d, %v; want %d", code, err, tt.want)
			}
		})
	}
}

package lsp_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
)

// implScript is a user's file. The first name on the torch.add line is not
// ASCII, so the request's UTF-16 column (on the a of add) is one less than
// its byte column: read as bytes it would land after torch, which has no
// registrations.
const implScript = `import torch
import torch.nn.functional as F

x = torch.randn(3, 4)
é = torch.add(x, x)
z = F.relu(é).view(12)
print(z)
`

// TestImplementationDebianTorch asks textDocument/implementation of the real
// engine on Debian's torch 1.13 through the fake editor, and reads the lines
// it points at in the mirror.
func TestImplementationDebianTorch(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 is missing")
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/_refs/__init__.py"); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	root := t.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}
	eng := server.New(server.Options{Dirs: dirs})
	settings := map[string]any{"defaultTarget": "deb", "targets": map[string]any{"deb": map[string]any{"python": "/usr/bin/python3"}}}
	c, _ := lsptest.Connect(t, lsptest.Wire{Engine: lsp.NewEngine(eng), Options: lsp.Options{Version: "test"}}, lsptest.Options{InitializationOptions: settings})
	var init struct {
		Capabilities struct {
			ImplementationProvider bool `json:"implementationProvider"`
		} `json:"capabilities"`
	}
	if err := c.Call(ctx, "initialize", c.InitializeParams(), &init); err != nil {
		t.Fatal(err)
	}
	if !init.Capabilities.ImplementationProvider {
		t.Error("initialize does not advertise implementationProvider")
	}
	if err := c.Initialized(); err != nil {
		t.Fatal(err)
	}
	doc := "file://" + filepath.Join(root, "train.py")
	if err := c.DidOpen(doc, "python", implScript); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		needle      string
		off         int
		file        string // the mirror file every answer must include
		linePrefix  string // how that line starts
		rangeText   string // what the range covers on it
		wantNothing bool
	}{
		{name: "module function", needle: "torch.add(", off: 6, file: "torch/_refs/__init__.py", linePrefix: "@register_decomposition(", rangeText: "register_decomposition"},
		{name: "tensor method", needle: ".view(", off: 2, file: "torch/_refs/__init__.py", linePrefix: "@register_decomposition(", rangeText: "register_decomposition"},
		{name: "builtin", needle: "print(", off: 1, wantNothing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, char, err := lsptest.Find(implScript, tt.needle, 0, tt.off)
			if err != nil {
				t.Fatal(err)
			}
			var locs []lsptest.Location
			params := map[string]any{"textDocument": map[string]string{"uri": doc}, "position": lsptest.Position{Line: line, Character: char}}
			if err := c.Call(ctx, "textDocument/implementation", params, &locs); err != nil {
				t.Fatal(err)
			}
			if tt.wantNothing {
				if len(locs) != 0 {
					t.Errorf("got %v, want nothing", locs)
				}
				return
			}
			found := false
			for _, l := range locs {
				u, err := url.Parse(l.URI)
				if err != nil || u.Scheme != "file" || !strings.HasPrefix(u.Path, dirs.Cache) {
					t.Errorf("location %s is not in the mirror under %s", l.URI, dirs.Cache)
					continue
				}
				if !strings.HasSuffix(u.Path, "/site/"+tt.file) {
					continue
				}
				found = true
				b, err := os.ReadFile(u.Path)
				if err != nil {
					t.Fatal(err)
				}
				text := strings.Split(string(b), "\n")[l.Range.Start.Line]
				if !strings.HasPrefix(text, tt.linePrefix) {
					t.Errorf("line %d of %s is %q, want it to start with %q", l.Range.Start.Line+1, tt.file, text, tt.linePrefix)
				}
				if l.Range.End.Line != l.Range.Start.Line || int(l.Range.End.Character) > len(text) ||
					text[l.Range.Start.Character:l.Range.End.Character] != tt.rangeText {
					t.Errorf("range %+v on %q does not cover %q", l.Range, text, tt.rangeText)
				}
			}
			if !found {
				t.Errorf("no location in %s among %v", tt.file, locs)
			}
		})
	}
}

// An engine that does not implement Implementation answers null.
func TestImplementationNotImplemented(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	c, _ := startInitialized(t, ctx, newTestEngine(), lsptest.Options{})
	if err := c.DidOpen("file:///a.py", "python", "import torch\ntorch.add\n"); err != nil {
		t.Fatal(err)
	}
	var locs []lsptest.Location
	params := map[string]any{"textDocument": map[string]string{"uri": "file:///a.py"}, "position": lsptest.Position{Line: 1, Character: 7}}
	if err := c.Call(ctx, "textDocument/implementation", params, &locs); err != nil {
		t.Fatal(err)
	}
	if locs != nil {
		t.Errorf("got %v, want null", locs)
	}
}

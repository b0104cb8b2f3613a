package lsp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
)

type documentLink struct {
	Range   lsptest.Range `json:"range"`
	Target  *string       `json:"target"`
	Tooltip string        `json:"tooltip"`
}

// TestDocumentLinksDebianTorch asks textDocument/documentLink of the real
// engine, on Debian's torch 1.13, through the fake editor: a log holding a
// real traceback (one frame line behind non-ASCII text, so that UTF-16
// and byte columns differ), an untitled buffer, and a traceback from
// another torch version. Each link's range covers the path through the
// line number, each target opens the mirror at the line the traceback
// prints, and the other version's frames come with no target and a
// tooltip. torchlsp.links maps a terminal's line the same way.
func TestDocumentLinksDebianTorch(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 is missing")
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	root := t.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}
	eng := server.New(server.Options{Dirs: dirs})
	srvConn, cliConn := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = lsp.Serve(context.Background(), srvConn, lsp.NewEngine(eng), lsp.Options{Version: "test"})
	}()
	settings := map[string]any{"defaultTarget": "deb", "targets": map[string]any{"deb": map[string]any{"python": "/usr/bin/python3"}}}
	c := lsptest.New(cliConn, lsptest.Options{InitializationOptions: settings})
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	var init struct {
		Capabilities struct {
			DocumentLinkProvider *struct{} `json:"documentLinkProvider"`
			ExecuteCommand       struct {
				Commands []string `json:"commands"`
			} `json:"executeCommandProvider"`
		} `json:"capabilities"`
	}
	if err := c.Call(ctx, "initialize", c.InitializeParams(), &init); err != nil {
		t.Fatal(err)
	}
	if init.Capabilities.DocumentLinkProvider == nil {
		t.Error("initialize does not advertise documentLinkProvider")
	}
	for _, want := range []string{"torchlsp.traceback", "torchlsp.links"} {
		if !strings.Contains(strings.Join(init.Capabilities.ExecuteCommand.Commands, " "), want) {
			t.Errorf("commands %v lack %s", init.Capabilities.ExecuteCommand.Commands, want)
		}
	}
	if err := c.Initialized(); err != nil {
		t.Fatal(err)
	}
	capture, err := os.ReadFile(filepath.Join("..", "server", "traceback", "testdata", "torch113", "threads.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(capture), `  File "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"`, `→ ü File "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"`, 1)
	lines := strings.Split(text, "\n")

	links := func(uri, text string) []documentLink {
		t.Helper()
		if err := c.DidOpen(uri, "log", text); err != nil {
			t.Fatal(err)
		}
		var out []documentLink
		if err := c.Call(ctx, "textDocument/documentLink", map[string]any{"textDocument": map[string]string{"uri": uri}}, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, uri := range []string{"file://" + filepath.Join(root, "run.log"), "untitled:Untitled-1"} {
		got := links(uri, text)
		if len(got) != 4 {
			t.Fatalf("%s: %d links, want the 4 torch frames: %+v", uri, len(got), got)
		}
		for _, l := range got {
			line := utf16.Encode([]rune(lines[l.Range.Start.Line]))
			span := string(utf16.Decode(line[l.Range.Start.Character:l.Range.End.Character]))
			if !strings.HasPrefix(span, "/usr/lib/python3/dist-packages/torch/") || !strings.Contains(span, `", line `) {
				t.Errorf("range %+v covers %q", l.Range, span)
			}
			if l.Target == nil {
				t.Fatalf("no target: %+v", l)
			}
			u, err := url.Parse(*l.Target)
			if err != nil || u.Scheme != "file" || !strings.HasPrefix(u.Path, dirs.Cache) || !strings.HasPrefix(u.Fragment, "L") {
				t.Fatalf("target %s is not a mirror file at a line", *l.Target)
			}
			n := 0
			for _, c := range u.Fragment[1:] {
				n = n*10 + int(c-'0')
			}
			src, err := os.ReadFile(u.Path)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.TrimSpace(lines[l.Range.Start.Line+1])
			if got := strings.TrimSpace(strings.Split(string(src), "\n")[n-1]); got != want {
				t.Errorf("%s: line %d is %q, the traceback prints %q", u.Path, n, got, want)
			}
		}
	}
	// Another torch wrote this one: no target, and the tooltip says so.
	got := links("file://"+filepath.Join(root, "old.log"), "torch 2.11.0\n"+string(capture))
	if len(got) != 4 || got[0].Target != nil || !strings.Contains(got[0].Tooltip, "from torch 2.11.0") {
		t.Errorf("links of another version: %+v", got)
	}

	// A terminal's line, through torchlsp.links.
	line := `→ ü File "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", line 114, in forward`
	var res struct {
		Links []struct {
			StartUTF16 int    `json:"startUTF16"`
			EndUTF16   int    `json:"endUTF16"`
			Start      int    `json:"start"`
			URI        string `json:"uri"`
			FileLine   int    `json:"fileLine"`
		} `json:"links"`
	}
	args, _ := json.Marshal(map[string]string{"text": line})
	if err := c.Call(ctx, "workspace/executeCommand", map[string]any{"command": "torchlsp.links", "arguments": []json.RawMessage{args}}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Links) != 1 || res.Links[0].StartUTF16 != 10 || res.Links[0].Start != strings.Index(line, "/usr") ||
		!strings.HasSuffix(res.Links[0].URI, "/site/torch/nn/modules/linear.py#L114") || res.Links[0].FileLine != 114 {
		t.Errorf("torchlsp.links: %+v", res)
	}
}

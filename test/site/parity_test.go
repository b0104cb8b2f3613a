package site

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPyrightSiteParity measures, on realistic training code
// (testdata/parity/gpt_train.py: a GPT of nn.Module subclasses, F.* calls,
// a training loop with an optimizer, grad scaling, torch.compile with
// Inductor flags, DDP/FSDP set-up), pyright pointed at `torchlsp site`
// with no other torch anywhere against pyright with extraPaths at a plain
// copy of the same torch 2.11 tree: at every identifier where the copy's
// pyright lands in torch, the site's pyright must land on the same file
// (from torch/ on) and line at 99% of them or more. It also counts what
// torchlsp answers there, and that torchlsp and the site's pyright
// together answer every position torchlsp answers.
func TestPyrightSiteParity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target func(testing.TB) siteTarget
	}{{"torch 2.11", torch211Target}, {"Debian torch 1.13", debianTarget}} {
		t.Run(tc.name, func(t *testing.T) { pyrightSiteParity(t, tc.target(t)) })
	}
}

func pyrightSiteParity(t *testing.T, tgt siteTarget) {
	argv := npmServer("pyright")(t)
	ws := workspace(t)
	src, err := os.ReadFile(filepath.Join("testdata", "parity", "gpt_train.py"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(ws, "gpt_train.py")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHome(t, tgt)
	site := runSite(t, h, ws)
	python := noTorchPython(t)
	positions := identifiers(string(src))

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	answers := func(name string, argv []string, settings map[string]any, env []string) []*lspLocation {
		srv := startServer(t, ctx, serverConfig{argv: argv, env: env, root: ws, settings: settings, initOptions: settings})
		defer srv.stop()
		srv.open(file, "python")
		// The first answer comes once the server has analysed the file.
		wl, wc := find(t, file, "nn.Linear(config.n_embd, 3", "Linear")
		if _, err := srv.definition(ctx, file, wl, wc); err != nil {
			t.Fatalf("%s: no first definition: %v\n%s", name, err, srv.logTail())
		}
		out := make([]*lspLocation, len(positions))
		for i, p := range positions {
			locs, err := srv.definitionOnce(ctx, file, p.line, p.col)
			if err != nil {
				t.Fatalf("%s: definition at %d:%d: %v", name, p.line+1, p.col+1, err)
			}
			if len(locs) > 0 {
				out[i] = &locs[0]
			}
		}
		return out
	}
	pyright := func(extra string) map[string]any {
		return map[string]any{"python": map[string]any{"pythonPath": python, "analysis": map[string]any{"extraPaths": []string{extra}}}}
	}
	env := cleanEnv(h.env...)
	viaSite := answers("pyright with the site", argv, pyright(site), env)
	viaCopy := answers("pyright with a copy", argv, pyright(tgt.site), env)
	viaTorchlsp := answers("torchlsp", []string{torchlspBin, "serve", "--stdio"}, map[string]any{}, env)

	inTorch, same, torchlspAnswered, torchlspInTorch, union := 0, 0, 0, 0, 0
	for i, p := range positions {
		if c := viaCopy[i]; c != nil && torchRel(c.uri()) != "" {
			inTorch++
			if viaTorchlsp[i] != nil {
				torchlspInTorch++
			}
			if viaTorchlsp[i] != nil || viaSite[i] != nil {
				union++
			}
			if s := viaSite[i]; s != nil && torchRel(s.uri()) == torchRel(c.uri()) && s.line() == c.line() {
				same++
			} else {
				t.Logf("differs at %d:%d %q: copy %s:%d, site %v", p.line+1, p.col+1, p.word, torchRel(c.uri()), c.line()+1, describe(viaSite[i]))
			}
		}
		if viaTorchlsp[i] != nil {
			torchlspAnswered++
		}
	}
	pct := 100 * float64(same) / float64(max(inTorch, 1))
	t.Logf("MEASURE %d identifiers; pyright with a copy lands in torch at %d; pyright with the site lands on the same file and line at %d (%.1f%%); torchlsp alone answers %d of those %d, torchlsp and pyright with the site together %d; torchlsp answers %d identifiers in all, pyright with the site answers %d of them too",
		len(positions), inTorch, same, pct, torchlspInTorch, inTorch, union, torchlspAnswered, countBoth(viaTorchlsp, viaSite))
	if inTorch == 0 || pct < 99 {
		t.Errorf("parity %.1f%% (%d of %d), want at least 99%%", pct, same, inTorch)
	}
	if union != inTorch {
		t.Errorf("torchlsp and pyright with the site together miss %d of the %d places in torch", inTorch-union, inTorch)
	}
}

type identPos struct {
	line, col int
	word      string
}

var identRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// identifiers lists the identifiers of a Python file outside comments and
// string literals (a line scan is enough for this file), one position
// inside each.
func identifiers(src string) []identPos {
	var out []identPos
	for i, line := range strings.Split(src, "\n") {
		code := stripStringsAndComments(line)
		for _, m := range identRE.FindAllStringIndex(code, -1) {
			out = append(out, identPos{line: i, col: m[0] + (m[1]-m[0])/2, word: code[m[0]:m[1]]})
		}
	}
	return out
}

// stripStringsAndComments blanks string literals and comments, keeping
// columns.
func stripStringsAndComments(line string) string {
	b := []byte(line)
	var quote byte
	for i := 0; i < len(b); i++ {
		switch {
		case quote != 0:
			if b[i] == '\\' && i+1 < len(b) {
				b[i], b[i+1] = ' ', ' '
				i++
				continue
			}
			if b[i] == quote {
				quote = 0
			}
			b[i] = ' '
		case b[i] == '#':
			for j := i; j < len(b); j++ {
				b[j] = ' '
			}
			return string(b)
		case b[i] == '"' || b[i] == '\'':
			quote = b[i]
			b[i] = ' '
		}
	}
	return string(b)
}

// torchRel is a location's path from torch/ on, or "" outside torch.
func torchRel(uri string) string {
	if i := strings.LastIndex(uri, "/torch/"); i >= 0 {
		return uri[i+1:]
	}
	return ""
}

func describe(l *lspLocation) string {
	if l == nil {
		return "nothing"
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func countBoth(a, b []*lspLocation) int {
	n := 0
	for i := range a {
		if a[i] != nil && b[i] != nil {
			n++
		}
	}
	return n
}

// definitionOnce asks for the definition once, without waiting for an
// answer to appear.
func (s *server) definitionOnce(ctx context.Context, path string, line, col int) ([]lspLocation, error) {
	params := map[string]any{
		"textDocument": map[string]string{"uri": fileURI(path)},
		"position":     map[string]int{"line": line, "character": col},
	}
	var raw json.RawMessage
	if err := s.call(ctx, "textDocument/definition", params, &raw); err != nil {
		return nil, err
	}
	return decodeLocations(raw)
}

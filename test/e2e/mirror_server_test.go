package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// A client that starts one server per jump roots the second server at
// the mirror the first one answered into. That server serves the
// mirror's target (from the user's settings, not the workspace's) and
// answers there as the first does, with no second mirror or site; with
// the target not configured it says so and answers from the mirror alone.
func TestServerInAMirror(t *testing.T) {
	t.Parallel()
	needPython(t)
	sb := lsptest.NewSandbox(t)
	site := filepath.Join(repoRoot(t), "testdata", "site")
	// The user's settings know the target; the workspace's settings pick
	// it. A server started elsewhere defaults to the built-in local
	// target (Debian's torch 1.13).
	writeUserConfig(t, sb.Config, "[targets.fixture]\npython = "+tomlString(debianPython)+"\nenv = { PYTHONPATH = "+tomlString(site)+" }\n")
	first := lsptest.Start(t, lsptest.Config{
		Server: program(t), Sandbox: &sb,
		CopyFrom: filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace"),
		Settings: mustJSON(t, map[string]any{"defaultTarget": "fixture"}),
	})
	uri := first.OpenFile("train.py")
	locs := first.Definition(uri, first.At(uri, "nn.Linear(4, 4)", 3))
	if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "/site/torch/nn/modules/linear.py") {
		t.Fatalf("definition of nn.Linear = %+v", locs)
	}
	first.AwaitProgressEnd("torchlsp: torch on fixture")
	// The workspace's own files are the workspace server's alone: what
	// both servers see is the mirror.
	if err := first.Client().DidClose(uri); err != nil {
		t.Fatal(err)
	}
	linear := uriPath(t, locs[0].URI)
	siteDir := strings.TrimSuffix(linear, "/torch/nn/modules/linear.py")
	mirrorRoot := filepath.Dir(siteDir)
	manifest, err := os.ReadFile(filepath.Join(mirrorRoot, "manifest.json"))
	if err != nil {
		t.Fatalf("the first server's mirror: %v", err)
	}
	before := cacheDirs(t, sb.Cache)

	text, err := os.ReadFile(linear)
	if err != nil {
		t.Fatal(err)
	}
	fileURI := lsptest.FileURI(linear)
	first.OpenBuffer(fileURI, string(text))
	want := mirrorAnswers(t, first, fileURI)
	// The workspace's server also finds the uses in the workspace's own
	// files, open or not (train.py, closed above); a server in the
	// mirror has no workspace but the mirror.
	var own []lsptest.Location
	want.references, own = splitOff(want.references, sb.Workdir)
	if len(own) != 1 || own[0].URI != lsptest.FileURI(filepath.Join(sb.Workdir, "train.py")) ||
		own[0].Range.Start.Line != 14 || own[0].Range.Start.Character != 23 {
		t.Errorf("references of Linear in the closed workspace files = %+v, want train.py's nn.Linear at 15:24", own)
	}

	// The second server, as the client starts it on the jump: rooted at
	// the mirror's site directory, with no settings of the workspace.
	second := lsptest.Start(t, lsptest.Config{Server: program(t), Sandbox: &sb, Client: lsptest.Options{RootDir: siteDir}})
	second.OpenBuffer(fileURI, string(text))
	got := mirrorAnswers(t, second, fileURI)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the server in the mirror answers\n%+v\nthe workspace's server\n%+v", got, want)
	}
	second.Shutdown()

	// The target not configured (the user's settings elsewhere): the
	// server says so and still navigates the mirror.
	unconfigured := sb
	unconfigured.Config = t.TempDir()
	third := lsptest.Start(t, lsptest.Config{Server: program(t), Sandbox: &unconfigured, Client: lsptest.Options{RootDir: siteDir}})
	third.AwaitMessage(`target "fixture", which is not configured here`)
	third.OpenBuffer(fileURI, string(text))
	ro := mirrorAnswers(t, third, fileURI)
	if !reflect.DeepEqual(ro.definitions, want.definitions) || !reflect.DeepEqual(ro.references, want.references) || ro.symbols != want.symbols {
		t.Errorf("the server in the mirror of an unconfigured target answers\n%+v\nthe workspace's server\n%+v", ro, want)
	}
	if ro.hover == "" || !strings.Contains(ro.hover, "class Module") {
		t.Errorf("hover in the mirror of an unconfigured target: %q", ro.hover)
	}
	third.Shutdown()

	// The workspace's server keeps its workspace model in the cache when
	// it has built one (in the background, whenever train.py's check
	// ran): that directory holds its model alone, never one of the
	// servers in the mirror, which build none.
	models := filepath.Join(sb.Cache, "torchlsp", "workspace")
	if m, _ := filepath.Glob(filepath.Join(models, "*.gob")); len(m) > 1 {
		t.Errorf("workspace models in the cache: %q, want the workspace server's at most", m)
	}
	before = slices.DeleteFunc(before, func(d string) bool { return d == "/torchlsp/workspace" })
	after := slices.DeleteFunc(cacheDirs(t, sb.Cache), func(d string) bool { return d == "/torchlsp/workspace" })
	if !slices.Equal(after, before) {
		t.Errorf("the servers in the mirror changed the cache's directories:\nbefore %q\nafter  %q", before, after)
	}
	if again, err := os.ReadFile(filepath.Join(mirrorRoot, "manifest.json")); err != nil || string(again) != string(manifest) {
		t.Errorf("the mirror was made again: %v", err)
	}
	first.Shutdown()
}

// mirrorReplies are what a server says about a mirror's file.
type mirrorReplies struct {
	definitions [][]lsptest.Location
	references  []lsptest.Location
	symbols     string // the workspace/symbol reply
	hover       string
}

// mirrorAnswers asks a server about linear.py of the fixture's mirror:
// definitions of names imported and inherited, the references of Linear,
// workspace symbols and a hover.
func mirrorAnswers(t *testing.T, env *lsptest.Env, uri string) mirrorReplies {
	t.Helper()
	var a mirrorReplies
	for _, at := range []struct {
		needle string
		off    int
	}{
		{"class Linear(Module)", len("class Linear(")},
		{"from ..parameter import Parameter", len("from ..parameter import ")},
		{"checkpoint as _checkpoint", len("checkpoint as ")},
	} {
		a.definitions = append(a.definitions, env.Definition(uri, env.At(uri, at.needle, at.off)))
	}
	a.references = env.References(uri, env.At(uri, "class Linear(Module)", len("class ")))
	slices.SortFunc(a.references, compareLocations)
	var symbols json.RawMessage
	if err := env.Client().Call(env.Ctx(), "workspace/symbol", map[string]string{"query": "Linear"}, &symbols); err != nil {
		t.Fatalf("workspace/symbol: %v", err)
	}
	a.symbols = string(symbols)
	if h := env.Hover(uri, env.At(uri, "class Linear(Module)", len("class Linear("))); h != nil {
		a.hover = h.Contents.Value
	}
	if len(a.references) < 2 || !strings.Contains(a.symbols, "linear.py") {
		t.Fatalf("too little to compare: %+v", a)
	}
	for _, d := range a.definitions {
		if len(d) != 1 {
			t.Fatalf("definitions = %+v", a.definitions)
		}
	}
	return a
}

// splitOff separates the locations in files under dir from the others.
func splitOff(locs []lsptest.Location, dir string) (others, under []lsptest.Location) {
	prefix := lsptest.FileURI(dir) + "/"
	for _, l := range locs {
		if strings.HasPrefix(l.URI, prefix) {
			under = append(under, l)
		} else {
			others = append(others, l)
		}
	}
	return others, under
}

func compareLocations(a, b lsptest.Location) int {
	if c := strings.Compare(a.URI, b.URI); c != 0 {
		return c
	}
	if a.Range.Start.Line != b.Range.Start.Line {
		return int(a.Range.Start.Line) - int(b.Range.Start.Line)
	}
	return int(a.Range.Start.Character) - int(b.Range.Start.Character)
}

// cacheDirs lists the directories under the cache, sorted.
func cacheDirs(t *testing.T, cache string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			out = append(out, strings.TrimPrefix(p, cache))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// writeUserConfig writes the user's config.toml under an XDG config home.
func writeUserConfig(t *testing.T, xdgConfig, text string) {
	t.Helper()
	dir := filepath.Join(xdgConfig, "torchlsp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

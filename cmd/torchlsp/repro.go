package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/source"
)

// targetList collects repeated --target flags.
type targetList []string

func (t *targetList) String() string     { return strings.Join(*t, ",") }
func (t *targetList) Set(v string) error { *t = append(*t, v); return nil }

// runRepro runs the threaded repro of the torch.compile call at FILE:LINE
// on one or more targets and prints the table.
func runRepro(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("repro", flag.ContinueOnError)
	var c commonFlags
	c.registerOthers(fs)
	var targets targetList
	fs.Var(&targets, "target", "target name; repeat for several targets")
	all := fs.Bool("all", false, "every configured target")
	threads := fs.Int("threads", repro.DefaultThreads, "worker threads per variant")
	verbose := fs.Bool("verbose", false, "print every line the runs print")
	own := fs.Bool("own", false, "run the compiled object of your own code with real inputs (a '# torchlsp: inputs=FACTORY' directive, else its first call, captured from the file run as __main__)")
	workdir := fs.String("workdir", "", "with --own: a checkout on the target (an absolute path, or one under ~/) instead of sending the workspace's Python files")
	gpus := fs.Int("gpus", 0, "GPUs for the one-thread-per-GPU variants (0: every GPU the target has, 1: leave them out)")
	allowHome := fs.Bool("allow-home", false, allowHomeUsage)
	hazard := fs.String("hazard", "", "run the variants that show a diagnostic's hazard instead of the threading ones: "+hazardUsage())
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, ok := repro.HazardFor(*hazard); *hazard != "" && !ok {
		return usageError{fmt.Errorf("--hazard %q: the hazards with repro variants are %s", *hazard, strings.Join(repro.HazardCodes(), ", "))}
	}
	abs, line, text, err := fileLineArg(fs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	eng, doc, done, err := openRun(ctx, c, abs, text, stderr)
	if err != nil {
		return err
	}
	defer done()
	// Without --own the stand-in runs: the command line never falls back.
	res, err := eng.Repro(ctx, server.RunArgs{URI: doc.URI(), Line: line - 1, All: *all, Own: *own, StandIn: !*own, Hazard: *hazard,
		Caller: &server.RunCaller{Sink: printEvents(stderr, *verbose), Targets: targets, Threads: *threads,
			Devices: *gpus, Workdir: *workdir, AllowHome: *allowHome}})
	if res == nil {
		return homeHint(err)
	}
	// A terminal shows Markdown as text: the escapes meant for an HTML
	// renderer would only be noise there.
	fmt.Fprintln(stdout, html.UnescapeString(res.Markdown))
	ran := 0
	for _, r := range res.Reports {
		if r.Dir != "" {
			fmt.Fprintf(stderr, "torchlsp: files of the run on %s are in %s\n", termName(r.Target), termName(r.Dir))
		}
		for _, v := range r.Variants {
			if v.Failure == "" && v.Unsupported == "" {
				ran++
			}
		}
	}
	if err == nil && ran == 0 {
		return errors.New("no variant ran on any target")
	}
	return err
}

// hazardUsage lists the hazards --hazard takes and their variants.
func hazardUsage() string {
	var parts []string
	for _, code := range repro.HazardCodes() {
		h, _ := repro.HazardFor(code)
		parts = append(parts, fmt.Sprintf("%s (%s)", code, strings.Join(h.Variants, ", ")))
	}
	return strings.Join(parts, "; ")
}

// fileLineArg reads the one FILE:LINE argument: the file's absolute path,
// the 1-based line and the text.
func fileLineArg(fs *flag.FlagSet) (string, int, []byte, error) {
	if fs.NArg() != 1 {
		return "", 0, nil, usageError{fmt.Errorf("want one FILE:LINE")}
	}
	arg := fs.Arg(0)
	i := strings.LastIndexByte(arg, ':')
	if i < 0 {
		return "", 0, nil, usageError{fmt.Errorf("want FILE:LINE with a 1-based line, got %q", arg)}
	}
	line, err := strconv.Atoi(arg[i+1:])
	if err != nil || line < 1 {
		return "", 0, nil, usageError{fmt.Errorf("want FILE:LINE with a 1-based line, got %q", arg)}
	}
	abs, err := filepath.Abs(arg[:i])
	if err != nil {
		return "", 0, nil, err
	}
	text, err := localfile.Read(abs, source.DefaultMaxBytes)
	if err != nil {
		return "", 0, nil, err
	}
	return abs, line, text, nil
}

// allowHomeUsage describes --allow-home.
const allowHomeUsage = "with your own code: send the Python files of your home directory (or of a directory holding it) when the run's workspace is there; without it such a run is refused"

// homeHint adds to a run refused for a home directory what to do about it.
func homeHint(err error) error {
	if errors.Is(err, server.ErrHomeRefused) {
		return fmt.Errorf("%w; pass --allow-home to send them, or put a torchlsp.toml in the project's own directory", err)
	}
	return err
}

// runRoot is the workspace root of a run on a file (rootOf), or "" when
// it has none: then only the file and the modules it imports travel, and
// the run's files go under the cache, never into a .torchlsp beside the
// file. A torchlsp.toml that makes no root is said on stderr, whatever
// --quiet says: it decides what the run sends.
func runRoot(path string, stderr io.Writer) string {
	root, st := rootOf(filepath.Dir(path))
	if msg := st.RootMessage("a run sends only " + filepath.Base(path) + " and the modules it imports, and keeps its files under the cache"); root == "" && msg != "" {
		fmt.Fprintln(stderr, termName(msg))
	}
	return root
}

// openRun starts an engine for the workspace of a file and opens it, for
// the commands that run code on the target (repro, explain); done shuts the
// engine down.
func openRun(ctx context.Context, c commonFlags, abs string, text []byte, stderr io.Writer) (*server.Engine, *server.Snapshot, func(), error) {
	eng, finish, err := newEngine(ctx, c, runRoot(abs, stderr), stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	done := func() { finish(ctx) }
	return eng, eng.DidOpen(ctx, source.FileURI(abs), "", 1, string(text)), done, nil
}

// printEvents prints a run's status lines, or every line when verbose.
func printEvents(stderr io.Writer, verbose bool) func(server.RunEvent) {
	return func(ev server.RunEvent) {
		if verbose || ev.Stream == "status" {
			fmt.Fprintf(stderr, "[%s %s] %s\n", termName(ev.Target), termName(ev.Variant), termName(ev.Line))
		}
	}
}

// Command torchlsp is a language server and command-line tool that answers
// questions about the torch installed on a target machine: hover and
// go-to-definition into its sources, its config flags, and repro runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `torchlsp — answers about the torch installed on your target machine

Usage:
  torchlsp serve [--stdio]                 speak LSP on stdin/stdout (editors start this)
  torchlsp hover FILE:LINE:COL             what an editor's hover would show
  torchlsp definition FILE:LINE:COL        where the name is defined (mirror PATH:LINE:COL and the target path)
  torchlsp references [--format text|json] FILE:LINE:COL
                                           every place that names the definition of the name there, in its
                                           package on the target and your open file (PATH:LINE:COL each)
  torchlsp symbols [--format text|json] QUERY
                                           functions, classes, methods and modules of the target's packages
                                           that match QUERY (exact, prefix, then fuzzy; a.b matches b in a)
  torchlsp callers [--format text|json] FILE:LINE:COL
                                           the functions that call the function there, and where
  torchlsp callees [--format text|json] FILE:LINE:COL
                                           what the function there calls, and where
  torchlsp implementation FILE:LINE:COL    where torch registers a compiled op for torch.compile: meta,
                                           decompositions, refs, Inductor lowering (mirror PATH:LINE:COL)
  torchlsp check [--format text|json] PATH…  lint for torch.compile and config hazards (exit 1 on warnings)
  torchlsp repro [--target NAME]… [--threads N] [--own [--workdir DIR] [--allow-home]] [--gpus N] [--hazard CODE] FILE:LINE
                                           run the threaded repro of the torch.compile call there
                                           (--own: your compiled object with real inputs; --hazard TL011:
                                           outputs kept across calls, TL013: varying sizes, each beside its fix)
  torchlsp explain [--target NAME] [--allow-home] FILE:LINE
                                           graph breaks and recompiles of that torch.compile call, from
                                           the target's Dynamo, as FILE:LINE:COL: message
                                           (--allow-home: send files of your home directory; refused without)
  torchlsp traceback [FILE|-]             each file a traceback or log from the target names, mapped to the
                                           mirror or the workspace: LOCAL:LINE: FUNC: SOURCE (exit 1: none maps)
  torchlsp gates FLAG                      a config flag's definition and every place torch reads it
  torchlsp trust [DIR]                     trust DIR/torchlsp.toml as it is now (--revoke, --list)
  torchlsp doctor                          check the target hop by hop
  torchlsp site                            the target's packages as a local site-packages directory (printed last)
  torchlsp version

Common flags:
  --target NAME      a target from torchlsp.toml or config.toml (default: the configured default, else "local")
  --python PATH      the interpreter to use on the target
LINE and COL are 1-based; COL counts characters.
`

// serveGCPercent is the collector's target for `torchlsp serve`, a
// process that lives as long as the editor: the heap may grow to 1.5× what
// is live instead of Go's default 2×. The cold index build of torch 2.11
// peaks at 139–142 MB of RSS instead of 157–161 MB with four build workers
// and takes 8% more CPU; once built, the heap barely moves and the
// collector runs rarely (docs/BENCHMARKS.md, "Memory of a cold start").
// GOGC, when set, wins.
const serveGCPercent = 50

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		// What the commands print reaches a terminal; serve's stdout is
		// the protocol, its stderr the editor's log.
		out, errOut := &termWriter{w: stdout}, &termWriter{w: stderr}
		defer errOut.Flush()
		defer out.Flush()
		stdout, stderr = out, errOut
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdin, stdout, stderr)
	case "hover":
		err = runHover(ctx, rest, stdout, stderr)
	case "definition":
		err = runDefinition(ctx, rest, stdout, stderr)
	case "implementation":
		err = runImplementation(ctx, rest, stdout, stderr)
	case "references":
		err = runReferences(ctx, rest, stdout, stderr)
	case "symbols":
		err = runSymbols(ctx, rest, stdout, stderr)
	case "callers":
		err = runCalls(ctx, "callers", true, rest, stdout, stderr)
	case "callees":
		err = runCalls(ctx, "callees", false, rest, stdout, stderr)
	case "check":
		err = runCheck(ctx, rest, stdout, stderr)
	case "repro":
		err = runRepro(ctx, rest, stdout, stderr)
	case "explain":
		err = runExplain(ctx, rest, stdout, stderr)
	case "traceback":
		err = runTraceback(ctx, rest, stdin, stdout, stderr)
	case "gates":
		err = runGates(ctx, rest, stdout, stderr)
	case "trust":
		err = runTrust(rest, stdout)
	case "doctor":
		err = runDoctor(ctx, rest, stdout, stderr)
	case "site":
		err = runSite(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "torchlsp %s\n", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "torchlsp: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "torchlsp %s: %v\n", cmd, err)
		return 2
	case errors.Is(err, errFindings):
		return 1
	case errors.Is(err, errNothingMapped):
		fmt.Fprintf(stderr, "torchlsp %s: %v\n", cmd, err)
		return 1
	case errors.Is(err, errNoAnswer):
		fmt.Fprintf(stderr, "torchlsp %s: %v\n", cmd, err)
		return 1
	default:
		fmt.Fprintf(stderr, "torchlsp %s: %v\n", cmd, err)
		return 1
	}
}

type usageError struct{ error }

var errNoAnswer = errors.New("nothing to say about that position (not a name from a package on the target)")

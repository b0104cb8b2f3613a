package main

import (
	"context"
	"flag"
	"fmt"
	"html"
	"io"
	"sort"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// runExplain runs the compiled object of the torch.compile call at
// FILE:LINE on the target with Dynamo's own reporting and prints each
// graph break and recompile as FILE:LINE: message, then the report.
func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	var c commonFlags
	c.registerOthers(fs)
	target := fs.String("target", "", "target name (default: the configured default)")
	workdir := fs.String("workdir", "", "a checkout on the target (an absolute path, or one under ~/) instead of sending the workspace's Python files")
	verbose := fs.Bool("verbose", false, "print every line the run prints")
	allowHome := fs.Bool("allow-home", false, allowHomeUsage)
	if err := parseFlags(fs, args); err != nil {
		return err
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
	res, err := eng.Explain(ctx, server.RunArgs{URI: doc.URI(), Line: line - 1, Target: *target,
		Caller: &server.RunCaller{Sink: printEvents(stderr, *verbose), Workdir: *workdir, AllowHome: *allowHome}})
	if res == nil {
		return homeHint(err)
	}
	uris := make([]string, 0, len(res.Diagnostics))
	for u := range res.Diagnostics {
		uris = append(uris, u)
	}
	sort.Strings(uris)
	for _, u := range uris {
		p, ok := source.FilePath(u)
		if !ok {
			p = u
		}
		for _, d := range res.Diagnostics[u] {
			fmt.Fprintf(stdout, "%s:%d:%d: %s [%s]\n", termName(p), d.Range.Start.Line+1, d.Range.Start.Column+1, termName(d.Message), d.Code)
		}
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, html.UnescapeString(res.Markdown))
	for _, r := range res.Reports {
		if r.Dir != "" {
			fmt.Fprintf(stderr, "torchlsp: files of the run are in %s\n", termName(r.Dir))
		}
	}
	return err
}

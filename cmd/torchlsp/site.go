package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/torchlsp/torchlsp/server"
)

// runSite mirrors what the workspace needs from the target and prints the
// site-packages view of it: a summary on stderr, the directory alone on
// stdout, so that `MYPYPATH=$(torchlsp site)` works.
func runSite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("site", flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Errorf("takes no arguments, only flags")}
	}
	ctx, eng, done, err := engineHere(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer done()
	res, err := eng.Site(ctx, server.TargetArgs{Target: c.target})
	if err != nil {
		return err
	}
	if !c.quiet {
		fmt.Fprintf(stderr, "site of target %s (%s): %d packages, %.1f MB, in %.1f s\n",
			termName(res.Target), termName(res.Python), len(res.Packages), float64(res.Bytes)/1e6, res.Elapsed.Seconds())
		for _, d := range res.Details {
			fmt.Fprintf(stderr, "  %-24s %-16s %8.1f MB  %s\n", termName(d.Name), termName(d.Version), float64(d.Bytes)/1e6, termName(d.Why))
		}
		for _, l := range res.Left {
			fmt.Fprintf(stderr, "  left out: %s\n", termName(l))
		}
	}
	fmt.Fprintln(stdout, termName(res.Path))
	return nil
}

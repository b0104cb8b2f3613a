package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// runGates prints a config flag's definition and every place the target's
// torch reads it.
func runGates(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gates", flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{fmt.Errorf("want one FLAG, e.g. triton.cudagraph_trees")}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	eng, err := newEngine(ctx, c, workspaceOf(cwd+"/."), stderr)
	if err != nil {
		return err
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = eng.Shutdown(sctx)
	}()
	return eng.Gates(ctx, c.target, fs.Arg(0), stdout)
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/torchlsp/torchlsp/server"
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
	ctx, eng, done, err := engineHere(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer done()
	res, err := eng.Gates(ctx, server.GatesArgs{Flag: fs.Arg(0), Target: c.target})
	if res != nil {
		if _, werr := io.WriteString(stdout, res.Text); err == nil {
			err = werr
		}
	}
	return err
}

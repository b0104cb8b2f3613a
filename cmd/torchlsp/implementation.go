package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/torchlsp/torchlsp/server/source"
)

// runImplementation prints where the target's torch defines the callable
// at FILE:LINE:COL for the compiler stack: one mirror PATH:LINE:COL per
// registration, what it is, and the same place on the target.
func runImplementation(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	eng, doc, pos, done, err := openAt(ctx, "implementation", args, stderr)
	if err != nil {
		return err
	}
	defer done()
	items, err := eng.Implementations(ctx, doc, pos)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return errNoImplementation
	}
	for _, it := range items {
		text, _ := os.ReadFile(it.Path)
		line, col, err := source.NewMapper(string(text)).ToCharColumn(it.Range.Start)
		if err != nil {
			line, col = it.Range.Start.Line+1, it.Range.Start.Column+1
		}
		what := strings.Join(it.Labels, ", ") + " " + it.Op
		if it.Func != "" {
			what += " (" + it.Func + ")"
		}
		if it.Cond != "" {
			what += " if " + it.Cond
		}
		fmt.Fprintf(stdout, "%s:%d:%d  %s\n", termName(it.Path), line, col, termName(what))
		if it.TargetPath != "" {
			fmt.Fprintf(stdout, "  on the target: %s:%d\n", termName(it.TargetPath), it.Range.Start.Line+1)
		}
	}
	return nil
}

// errNoImplementation is the answer for names with no registrations.
var errNoImplementation = fmt.Errorf("%w: no compiled-op registrations for that name in the target's torch", errNoAnswer)

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	importTorch := fs.Bool("import", false, "also time importing each package in the target's interpreter")
	if err := parseFlags(fs, args); err != nil {
		return err
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
	steps, err := eng.Doctor(ctx, c.target, *importTorch)
	if err != nil {
		return err
	}
	failed := false
	for _, st := range steps {
		mark := "ok  "
		if !st.OK {
			mark, failed = "FAIL", true
		}
		lat := ""
		if st.Latency > 0 {
			lat = " [" + st.Latency.Round(10*time.Microsecond).String() + "]"
		}
		fmt.Fprintf(stdout, "%s %-22s %s%s\n", mark, st.Name, st.Detail, lat)
		if st.Hint != "" && !st.OK {
			fmt.Fprintf(stdout, "     hint: %s\n", st.Hint)
		}
	}
	if failed {
		return fmt.Errorf("a check failed")
	}
	return nil
}

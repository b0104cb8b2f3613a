package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/torchlsp/torchlsp/server"
)

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	importTorch := fs.Bool("import", false, "also time importing each package in the target's interpreter")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, eng, done, err := engineHere(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer done()
	res, err := eng.Doctor(ctx, server.DoctorArgs{Target: c.target, ImportTorch: *importTorch})
	if err != nil {
		return err
	}
	steps := res.Steps
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
		fmt.Fprintf(stdout, "%s %-22s %s%s\n", mark, termName(st.Name), termName(st.Detail), lat)
		if st.Hint != "" && !st.OK {
			fmt.Fprintf(stdout, "     hint: %s\n", termName(st.Hint))
		}
	}
	if failed {
		return fmt.Errorf("a check failed")
	}
	return nil
}

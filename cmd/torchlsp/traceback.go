package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/torchlsp/torchlsp/server"
)

var errNothingMapped = errors.New("no reference in the text maps to the mirror or the workspace")

// runTraceback reads a traceback or log from a target (FILE, or stdin for
// "-" or no argument) and prints each reference it holds with the local
// file it maps to and that file's line: `LOCAL:LINE: FUNC: SOURCE` (the
// form compilers print, so editors and terminals open it), indented with
// why for those that map nowhere. The exit status is 0 when any
// reference mapped, 1 when none did.
func runTraceback(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("traceback", flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	verbose := fs.Bool("verbose", false, "say for each mapped reference where on the target it was, and why it maps")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageError{fmt.Errorf("want one FILE or -, got %d arguments", fs.NArg())}
	}
	name, docPath := "-", ""
	if fs.NArg() == 1 {
		name = fs.Arg(0)
	}
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
		if abs, err := filepath.Abs(name); err == nil {
			docPath = abs
		}
	}
	text, cut, err := readTail(in, server.MaxTracebackBytes)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if cut {
		fmt.Fprintf(stderr, "torchlsp: %s is over %d MB: reading its last %d MB\n", name, server.MaxTracebackBytes>>20, server.MaxTracebackBytes>>20)
	}
	ctx, eng, done, err := engineHere(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer done()
	res, err := eng.Traceback(ctx, text, docPath)
	if err != nil {
		return err
	}
	for _, f := range res.Frames {
		fn := f.Ref.Func
		if fn == "" {
			fn = "-"
		}
		switch {
		case f.Path != "":
			fmt.Fprintf(stdout, "%s:%d: %s: %s\n", f.Path, f.Line+1, fn, f.Source)
			if *verbose {
				fmt.Fprintf(stdout, "    from %s:%d: %s\n", f.Ref.Path, f.Ref.FileLine, f.Tooltip)
			}
		case f.Ref.Pseudo():
			fmt.Fprintf(stdout, "    %s:%d: %s: not a file\n", f.Ref.Path, f.Ref.FileLine, fn)
		case f.Tooltip != "":
			fmt.Fprintf(stdout, "    %s:%d: %s: not linked: %s\n", f.Ref.Path, f.Ref.FileLine, fn, f.Tooltip)
		default:
			fmt.Fprintf(stdout, "    %s:%d: %s: not mapped (in no mirrored package and no workspace)\n", f.Ref.Path, f.Ref.FileLine, fn)
		}
	}
	if res.Exception != "" {
		fmt.Fprintf(stdout, "\n%s\n", res.Exception)
	}
	if res.User >= 0 {
		u := res.Frames[res.User]
		fmt.Fprintf(stdout, "innermost frame in your code: %s:%d\n", u.Path, u.Line+1)
	}
	fmt.Fprintf(stdout, "%d of %d references mapped\n", res.Mapped, len(res.Frames))
	if res.Truncated {
		fmt.Fprintln(stderr, "torchlsp: the text holds more references than are listed")
	}
	if res.Mapped == 0 {
		return errNothingMapped
	}
	return nil
}

// readTail reads r whole, or its last max bytes when it is longer (a
// run's log ends with the traceback that stopped it).
func readTail(r io.Reader, max int) (string, bool, error) {
	buf := make([]byte, 0, 64<<10)
	cut := false
	chunk := make([]byte, 1<<20)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if len(buf) > 2*max {
			buf = append(buf[:0], buf[len(buf)-max:]...)
			cut = true
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false, err
		}
	}
	if len(buf) > max {
		buf, cut = buf[len(buf)-max:], true
	}
	return string(buf), cut, nil
}

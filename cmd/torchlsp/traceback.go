package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/localfile"
	"golang.org/x/sys/unix"
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
	name := "-"
	if fs.NArg() == 1 {
		name = fs.Arg(0)
	}
	if msg := waitNote(name, stdin); msg != "" && !c.quiet {
		fmt.Fprintln(stderr, termName(msg))
	}
	in, err := readTraceback(ctx, name, stdin)
	if err != nil {
		return err
	}
	if in.note != "" {
		fmt.Fprintf(stderr, "torchlsp: %s\n", termName(in.note))
	}
	text, docPath := in.text, in.path
	ctx, eng, done, err := engineHere(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer done()
	res, err := eng.Traceback(ctx, server.TracebackArgs{Text: text, Path: docPath, Quiet: true})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped (%v) while mapping %s", context.Cause(ctx), termName(name))
		}
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

// maxTracebackStreamBytes bounds what the command reads of a stream (a
// pipe, a FIFO, a terminal, a device): of a longer one it reads this
// much, keeps the last server.MaxTracebackBytes of it, and says so, so
// that /dev/zero or a producer that never stops ends the read.
const maxTracebackStreamBytes = 1 << 30

// tracebackInput is what the command read: the text, the local file it
// came from ("" for stdin) and a note on what was left out.
type tracebackInput struct {
	text, path, note string
}

// waitNote says, for an input that may never end or may wait for a
// writer (a named pipe, a device, a terminal), what the command waits
// for and how to stop it; "" for a file or a pipe.
func waitNote(name string, stdin io.Reader) string {
	shown := "stdin"
	var st os.FileInfo
	var err error
	if name == "-" {
		f, ok := stdin.(*os.File)
		if !ok {
			return ""
		}
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			return "torchlsp: reading stdin until its end (Ctrl-D); Ctrl-C (SIGINT) or SIGTERM stops it"
		}
		st, err = f.Stat()
	} else {
		shown = name
		st, err = os.Stat(name) // no open: a FIFO's open would wait
	}
	if err != nil {
		return ""
	}
	m := st.Mode()
	stop := "Ctrl-C (SIGINT) or SIGTERM stops it"
	switch {
	case m&os.ModeNamedPipe != 0 && name != "-":
		return fmt.Sprintf("torchlsp: reading %s, a named pipe, until its writer closes it (at most %d MB); %s", shown, maxTracebackStreamBytes>>20, stop)
	case m&os.ModeDevice != 0:
		return fmt.Sprintf("torchlsp: reading %s, %s, until its end (at most %d MB); %s", shown, localfile.Kind(m), maxTracebackStreamBytes>>20, stop)
	}
	return ""
}

// readTraceback reads the input of the traceback command: FILE, or stdin
// for "-". A regular file is read from its last server.MaxTracebackBytes
// (a run's log ends with the traceback that stopped it); a stream through
// the bounds of readTail. The read, and an open that waits for a FIFO's
// writer, end when ctx does (SIGINT, SIGTERM): the file is closed to
// unblock a read that waits on it, and the error says what stopped it.
// A read of stdin that waits is left to end with the process.
func readTraceback(ctx context.Context, name string, stdin io.Reader) (tracebackInput, error) {
	type result struct {
		in  tracebackInput
		err error
	}
	shown := name
	if name == "-" {
		shown = "stdin"
	}
	done := make(chan result, 1)
	opened := make(chan *os.File, 1)
	go func() {
		in, err := readInput(ctx, name, stdin, opened)
		done <- result{in, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() == nil {
			return r.in, fmt.Errorf("read %s: %w", termName(shown), r.err)
		}
		if r.err == nil {
			return r.in, nil
		}
	case <-ctx.Done():
	}
	select {
	case f := <-opened:
		f.Close()
	default:
	}
	return tracebackInput{}, fmt.Errorf("stopped (%v) while reading %s: nothing was mapped", context.Cause(ctx), termName(shown))
}

// readInput opens and reads the input; a file it opens is sent on opened
// (so that readTraceback can close it) and closed here otherwise.
func readInput(ctx context.Context, name string, stdin io.Reader, opened chan<- *os.File) (tracebackInput, error) {
	if name == "-" {
		text, note, err := readTail(ctx, stdin, server.MaxTracebackBytes, maxTracebackStreamBytes)
		if note != "" {
			note = "stdin " + note
		}
		return tracebackInput{text: text, note: note}, err
	}
	// A FIFO's open waits for its writer, as a shell's redirection does;
	// the wait ends with ctx, in readTraceback.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return tracebackInput{}, err
	}
	opened <- f
	// Closed by readTraceback when ctx ends first (the channel holds it
	// then), else here: Close after Close is harmless.
	defer f.Close()
	in := tracebackInput{}
	if abs, err := filepath.Abs(name); err == nil {
		in.path = abs
	}
	st, err := f.Stat()
	if err != nil {
		return in, err
	}
	if st.Mode().IsRegular() {
		in.text, in.note, err = readFileTail(f, st.Size(), server.MaxTracebackBytes)
	} else {
		in.text, in.note, err = readTail(ctx, f, server.MaxTracebackBytes, maxTracebackStreamBytes)
	}
	if in.note != "" {
		in.note = name + " " + in.note
	}
	return in, err
}

// readFileTail reads the last max bytes of a regular file of size bytes
// (at most max, should it grow meanwhile).
func readFileTail(f *os.File, size int64, max int) (string, string, error) {
	note := ""
	if size > int64(max) {
		if _, err := f.Seek(size-int64(max), io.SeekStart); err != nil {
			return "", "", err
		}
		note = fmt.Sprintf("is %d MB, over %d MB: reading its last %d MB", size>>20, max>>20, max>>20)
	}
	// Read straight into the string's own memory: io.ReadAll's doubling
	// and string(data)'s copy cost three times the text at their peak.
	var b strings.Builder
	b.Grow(int(min(size, int64(max))))
	_, err := io.Copy(&b, io.LimitReader(f, int64(max)))
	return b.String(), note, err
}

// readTail reads r to its end, or to limit bytes, and keeps the last max
// bytes of what it read (a run's log ends with the traceback that stopped
// it); it stops early when ctx ends. The note says what was left out, ""
// when nothing was.
func readTail(ctx context.Context, r io.Reader, max, limit int) (string, string, error) {
	// buf holds at most max bytes: it grows to max, then is a ring whose
	// oldest byte is at head, so that the stream's tail costs its own size
	// once, and the string made of it once more.
	if max <= 0 {
		return "", "", fmt.Errorf("read tail: a bound of %d bytes", max)
	}
	var buf []byte
	head, full := 0, false
	total := 0
	chunk := make([]byte, 1<<20)
	for total < limit {
		if err := ctx.Err(); err != nil {
			return "", "", err
		}
		n, err := r.Read(chunk[:min(len(chunk), limit-total)])
		total += n
		data := chunk[:n]
		if !full {
			room := min(max-len(buf), len(data))
			buf = append(buf, data[:room]...)
			data = data[room:]
			full = len(buf) == max
		}
		if len(data) > max {
			data = data[len(data)-max:]
		}
		for len(data) > 0 {
			k := copy(buf[head:], data)
			data = data[k:]
			head = (head + k) % max
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", err
		}
	}
	var b strings.Builder
	b.Grow(len(buf))
	b.Write(buf[head:])
	b.Write(buf[:head])
	note := ""
	switch {
	case total >= limit:
		note = fmt.Sprintf("did not end within %d MB: reading stopped there, and its last %d MB before that are mapped (pass the end of a longer log, e.g. tail -c %dM LOG)", limit>>20, max>>20, max>>20)
	case total > max:
		note = fmt.Sprintf("is %d MB, over %d MB: reading its last %d MB", total>>20, max>>20, max>>20)
	}
	return b.String(), note, nil
}

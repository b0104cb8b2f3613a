package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/source"
)

// commonFlags are the flags every engine-backed command takes.
type commonFlags struct {
	target  string
	python  string
	timeout time.Duration
	quiet   bool
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.target, "target", "", "target name (default: the configured default)")
	c.registerOthers(fs)
}

// registerOthers registers every common flag but --target.
func (c *commonFlags) registerOthers(fs *flag.FlagSet) {
	fs.StringVar(&c.python, "python", "", "interpreter on the target (overrides the target's python)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "give up after this long (mirroring a large torch takes a while the first time)")
	fs.BoolVar(&c.quiet, "quiet", false, "do not print progress")
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	return nil
}

// filePos is a FILE:LINE:COL argument, 1-based.
type filePos struct {
	path      string
	line, col int
}

func parseFilePos(arg string) (filePos, error) {
	parts := strings.Split(arg, ":")
	if len(parts) < 3 {
		return filePos{}, usageError{fmt.Errorf("want FILE:LINE:COL, got %q", arg)}
	}
	n := len(parts)
	line, err1 := strconv.Atoi(parts[n-2])
	col, err2 := strconv.Atoi(parts[n-1])
	if err1 != nil || err2 != nil || line < 1 || col < 1 {
		return filePos{}, usageError{fmt.Errorf("want FILE:LINE:COL with 1-based numbers, got %q", arg)}
	}
	return filePos{path: strings.Join(parts[:n-2], ":"), line: line, col: col}, nil
}

// workspaceOf finds the folder whose torchlsp.toml applies to path, by
// the one rule of rootOf, else path's own directory. A torchlsp.toml
// that makes no root elsewhere is said on stderr unless quiet (one in
// path's own directory the engine reads, and speaks of, itself).
func workspaceOf(path string, stderr io.Writer, quiet bool) string {
	dir := filepath.Dir(path)
	root, st := rootOf(dir)
	if root != "" {
		return root
	}
	if msg := st.RootMessage("its targets are ignored"); msg != "" && !quiet && st.Dir != dir {
		fmt.Fprintln(stderr, termName(msg))
	}
	return dir
}

// rootOf is the workspace root of a directory for every command: the
// nearest directory at or above it holding a torchlsp.toml, when that is
// a regular file of the user's whose content the user trusts
// (config.RootOf); else "", and st says why.
func rootOf(dir string) (string, config.WorkspaceStatus) {
	dirs, err := config.DefaultDirs()
	if err != nil {
		// No trust records to read: nothing is trusted.
		return "", config.WorkspaceStatus{Dir: dir, State: config.Absent}
	}
	return config.RootOf(dir, config.NewTrustStore(dirs))
}

// newEngine makes an engine for a command-line run rooted at folder, and
// the function that ends it: finish lets the work the command started
// (a mirror, an index) end as it would in an editor, within ctx, so that
// its progress ends in what it did and the next command finds it done,
// then shuts the engine down.
func newEngine(ctx context.Context, c commonFlags, folder string, stderr io.Writer) (*server.Engine, func(context.Context), error) {
	dirs, err := config.DefaultDirs()
	if err != nil {
		return nil, nil, err
	}
	note := &cliNotifier{w: stderr, quiet: c.quiet}
	eng := server.New(server.Options{
		Dirs:     dirs,
		Opener:   sshtarget.Opener{},
		Notifier: note,
		Target:   c.target,
		Python:   c.python,

		ValidateCache: true,
		// A one-shot hover shows a flag's value on the target: wait for
		// it (the --timeout bounds the whole command).
		ValueWait: c.timeout,
		// A one-shot check reports what the whole workspace's model
		// decides, not what one file shows before it is built.
		WaitForModel: true,
	})
	var folders []string
	if folder != "" {
		folders = []string{folder}
	}
	if err := eng.Initialize(ctx, server.InitializeParams{WorkspaceFolders: folders, ClientName: "torchlsp-cli"}); err != nil {
		return nil, nil, err
	}
	finish := func(ctx context.Context) {
		note.settle(ctx)
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = eng.Shutdown(sctx)
	}
	return eng, finish, nil
}

// engineHere starts an engine for the workspace of the current directory,
// bounded by the --timeout flag. done shuts it down.
func engineHere(ctx context.Context, c commonFlags, stderr io.Writer) (context.Context, *server.Engine, func(), error) {
	cwd, err := os.Getwd()
	if err != nil {
		return ctx, nil, nil, err
	}
	return engineAt(ctx, c, workspaceOf(cwd+"/.", stderr, c.quiet), stderr)
}

// engineAt starts an engine for the workspace folder, bounded by the
// --timeout flag. done shuts it down.
func engineAt(ctx context.Context, c commonFlags, folder string, stderr io.Writer) (context.Context, *server.Engine, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	eng, finish, err := newEngine(ctx, c, folder, stderr)
	if err != nil {
		cancel()
		return ctx, nil, nil, err
	}
	return ctx, eng, func() {
		finish(ctx)
		cancel()
	}, nil
}

// openAt starts an engine for a FILE:LINE:COL argument, opens the file and
// converts the position to the engine's units.
func openAt(ctx context.Context, name string, args []string, stderr io.Writer) (*server.Engine, *server.Snapshot, server.Position, context.CancelFunc, error) {
	return openAtWith(ctx, name, args, stderr, nil)
}

// openAtWith is openAt for a command with flags of its own, which more
// registers.
func openAtWith(ctx context.Context, name string, args []string, stderr io.Writer, more func(*flag.FlagSet)) (*server.Engine, *server.Snapshot, server.Position, context.CancelFunc, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	if more != nil {
		more(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, server.Position{}, nil, err
	}
	if fs.NArg() != 1 {
		return nil, nil, server.Position{}, nil, usageError{fmt.Errorf("want one FILE:LINE:COL argument")}
	}
	fp, err := parseFilePos(fs.Arg(0))
	if err != nil {
		return nil, nil, server.Position{}, nil, err
	}
	abs, err := filepath.Abs(fp.path)
	if err != nil {
		return nil, nil, server.Position{}, nil, err
	}
	text, err := os.ReadFile(abs)
	if err != nil {
		return nil, nil, server.Position{}, nil, err
	}
	pos, err := source.NewMapper(string(text)).FromCharColumn(fp.line, fp.col)
	if err != nil {
		return nil, nil, server.Position{}, nil, fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	eng, finish, err := newEngine(ctx, c, workspaceOf(abs, stderr, c.quiet), stderr)
	if err != nil {
		cancel()
		return nil, nil, server.Position{}, nil, err
	}
	doc := eng.DidOpen(ctx, source.FileURI(abs), "", 1, string(text))
	return eng, doc, pos, func() {
		finish(ctx)
		cancel()
	}, nil
}

func runHover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	eng, doc, pos, done, err := openAt(ctx, "hover", args, stderr)
	if err != nil {
		return err
	}
	defer done()
	h, err := eng.Hover(ctx, doc, pos)
	if err != nil {
		return err
	}
	if h == nil {
		return errNoAnswer
	}
	fmt.Fprint(stdout, h.Markdown)
	return nil
}

func runDefinition(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	eng, doc, pos, done, err := openAt(ctx, "definition", args, stderr)
	if err != nil {
		return err
	}
	defer done()
	locs, err := eng.Definition(ctx, doc, pos)
	if err != nil {
		return err
	}
	if len(locs) == 0 {
		// A name the target's torch lacks (torch.compile in torch 1.13)
		// has no definition: say so rather than nothing.
		if h, err := eng.Hover(ctx, doc, pos); err == nil && h != nil && h.Missing != "" {
			return fmt.Errorf("no definition: %s", termName(h.Missing))
		}
		return errNoAnswer
	}
	for _, l := range locs {
		text, _ := os.ReadFile(l.Path)
		line, col, err := source.NewMapper(string(text)).ToCharColumn(l.Range.Start)
		if err != nil {
			line, col = l.Range.Start.Line+1, l.Range.Start.Column+1
		}
		fmt.Fprintf(stdout, "%s:%d:%d\n", termName(l.Path), line, col)
		if l.TargetPath != "" {
			fmt.Fprintf(stdout, "  on the target: %s:%d\n", termName(l.TargetPath), l.Range.Start.Line+1)
		}
	}
	return nil
}

func runTrust(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	revoke := fs.Bool("revoke", false, "forget the trust given to DIR/torchlsp.toml")
	list := fs.Bool("list", false, "list trusted files")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	dirs, err := config.DefaultDirs()
	if err != nil {
		return err
	}
	store := config.NewTrustStore(dirs)
	if *list {
		files, err := store.Trusted()
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(stdout, termName(f))
		}
		return nil
	}
	dir := "."
	if fs.NArg() > 1 {
		return usageError{fmt.Errorf("want at most one DIR")}
	}
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	path := filepath.Join(dir, config.WorkspaceFile)
	if *revoke {
		if err := store.Revoke(path); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "torchlsp: %s is no longer trusted\n", termName(path))
		return nil
	}
	d, err := store.Trust(path)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(path)
	fmt.Fprintf(stdout, "torchlsp: trusted %s (%s); a change to it needs trust again\n", termName(abs), d)
	return nil
}

// cliNotifier prints the engine's messages and progress on stderr. It has
// no status item, diagnostics or documents to show.
type cliNotifier struct {
	server.NopNotifier
	mu    sync.Mutex // orders writes to w; guards open and idle
	w     io.Writer
	quiet bool
	open  int           // progresses begun and not ended
	idle  chan struct{} // closed when open falls to 0; nil while none is open
}

func (n *cliNotifier) ShowMessage(_ context.Context, typ server.MessageType, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintln(n.w, msg)
}

func (n *cliNotifier) LogMessage(_ context.Context, typ server.MessageType, msg string) {
	if typ > server.MessageWarning || n.quiet {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintln(n.w, msg)
}

func (n *cliNotifier) StartProgress(_ context.Context, title string, _ bool) server.Progress {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.open++
	if n.idle == nil {
		n.idle = make(chan struct{})
	}
	return &cliProgress{n: n, title: title, start: time.Now()}
}

// ended counts a progress as ended, once.
func (n *cliNotifier) ended() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.open--
	if n.open == 0 && n.idle != nil {
		close(n.idle)
		n.idle = nil
	}
}

// settle waits until every progress begun has ended, or ctx is done: the
// end of a command waits for the work it started, so that a mirror is
// finished (and said to be) rather than cut off when the answer is out.
func (n *cliNotifier) settle(ctx context.Context) {
	n.mu.Lock()
	idle := n.idle
	n.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// progressQuiet is how long work may take before the command line says
// what it is doing: quick steps (a cached mirror, a standard-library name)
// print nothing.
const progressQuiet = 300 * time.Millisecond

type cliProgress struct {
	server.NopProgress
	n       *cliNotifier
	title   string
	start   time.Time
	mu      sync.Mutex // guards the fields below
	lastPct int
	lastMsg string
	pending string // a report held back during the quiet start
	printed bool
	ended   bool
}

func (p *cliProgress) Report(msg string, pct int) {
	if p.n.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == p.lastMsg && (pct < 0 || pct-p.lastPct < 25) {
		return
	}
	p.lastMsg, p.lastPct = msg, pct
	line := fmt.Sprintf("%s: %s", termName(p.title), termName(msg))
	if pct >= 0 {
		line = fmt.Sprintf("%s: %s (%d%%)", termName(p.title), termName(msg), pct)
	}
	if time.Since(p.start) < progressQuiet {
		p.pending = line
		return
	}
	p.flushLocked()
	p.println(line)
}

func (p *cliProgress) End(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	defer p.n.ended()
	if p.n.quiet {
		return
	}
	if msg == "" || (!p.printed && time.Since(p.start) < progressQuiet && !strings.HasPrefix(msg, "failed")) {
		return
	}
	p.flushLocked()
	p.println(fmt.Sprintf("%s: %s", termName(p.title), termName(msg)))
}

// flushLocked prints the report held back during the quiet start.
func (p *cliProgress) flushLocked() {
	if p.pending != "" {
		p.println(p.pending)
		p.pending = ""
	}
}

func (p *cliProgress) println(line string) {
	p.printed = true
	p.n.mu.Lock()
	defer p.n.mu.Unlock()
	fmt.Fprintln(p.n.w, line)
}

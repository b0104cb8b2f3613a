package repro

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stateDir and reprosDir are where runs are kept, under the workspace.
const (
	stateDir  = ".torchlsp"
	reprosDir = "repros"
)

// runDir is one run's directory, <workspace>/.torchlsp/repros/<time>-<target>
// (or <own>/repros/<time>-<target> without a workspace). Every access goes
// through an os.Root, so no name and no symbolic link can lead outside it.
type runDir struct {
	path string
	root *os.Root
}

// newRunDir creates a fresh run directory; it never reuses one. It goes
// under workspace's .torchlsp when workspace is set, else under own, a
// directory of torchlsp's own that is created if missing.
func newRunDir(workspace, own, target string, now time.Time) (*runDir, error) {
	var state *os.Root
	base := workspace
	if workspace != "" {
		if !filepath.IsAbs(workspace) {
			return nil, fmt.Errorf("repro files: workspace %q is not an absolute path", workspace)
		}
		ws, err := os.OpenRoot(workspace)
		if err != nil {
			return nil, fmt.Errorf("repro files: %w", err)
		}
		defer ws.Close()
		if state, err = openPlainDir(ws, stateDir); err != nil {
			return nil, fmt.Errorf("repro files in %s: %w", workspace, err)
		}
		keepOutOfGit(state)
		base = filepath.Join(workspace, stateDir)
	} else {
		if !filepath.IsAbs(own) {
			return nil, fmt.Errorf("repro files: %q is not an absolute path", own)
		}
		if err := os.MkdirAll(own, 0o700); err != nil {
			return nil, fmt.Errorf("repro files: %w", err)
		}
		var err error
		if state, err = os.OpenRoot(own); err != nil {
			return nil, fmt.Errorf("repro files: %w", err)
		}
		base = own
	}
	defer state.Close()
	repros, err := openPlainDir(state, reprosDir)
	if err != nil {
		return nil, fmt.Errorf("repro files in %s: %w", base, err)
	}
	defer repros.Close()

	name := now.UTC().Format("20060102T150405Z") + "-" + safeName(target)
	first := name
	for i := 2; ; i++ {
		err := repros.Mkdir(name, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return nil, fmt.Errorf("repro files: create run directory: %w", err)
		}
		name = first + "-" + strconv.Itoa(i)
	}
	root, err := repros.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("repro files: %w", err)
	}
	return &runDir{path: filepath.Join(base, reprosDir, name), root: root}, nil
}

// keepOutOfGit puts a .gitignore that ignores everything into the state
// directory, once, so that runs' files never show up as untracked in the
// user's source control. A failure only costs that convenience.
func keepOutOfGit(state *os.Root) {
	f, err := state.OpenFile(".gitignore", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return // there already (the user's own, perhaps), or not writable
	}
	defer f.Close()
	_, _ = f.WriteString("# torchlsp keeps its repro runs here; they are not part of the project.\n*\n")
}

// openPlainDir opens dir inside parent, creating it (0700) if missing. A
// symbolic link there is refused, so the files stay in the workspace.
func openPlainDir(parent *os.Root, dir string) (*os.Root, error) {
	fi, err := parent.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := parent.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		if fi, err = parent.Lstat(dir); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link; refusing to write through it", dir)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return parent.OpenRoot(dir)
}

// create makes a new file (0600) in the run directory; it fails if the
// file exists.
func (d *runDir) create(name string) (*os.File, error) {
	f, err := d.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("repro files: %w", err)
	}
	return f, nil
}

// write creates name holding data.
func (d *runDir) write(name string, data []byte) error {
	f, err := d.create(name)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("repro files: write %s: %w", name, err)
	}
	return nil
}

func (d *runDir) close() error { return d.root.Close() }

// safeName keeps a target name usable in a file name.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	out := strings.Trim(b.String(), ".")
	if out == "" {
		return "target"
	}
	return out
}

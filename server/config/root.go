package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/torchlsp/torchlsp/server/localfile"
)

// A torchlsp.toml decides, for the command line, which directory is a
// file's workspace root: the root's Python files travel with a run of
// the user's own code, and the root's .torchlsp keeps the run's files.
// Anyone who can write a parent directory (a shared /tmp, a team share)
// can put a file of that name there, so the name alone decides nothing.
// The one rule, RootOf: the nearest directory at or above a file's that
// holds anything named torchlsp.toml is its root only when that is a
// regular file (no link, no directory, no pipe), owned by the current
// user, whose content the user trusts (TrustStore). Otherwise the file
// has no workspace root: the search does not go on past the file that
// failed, since that file is the one nearest the user's.

// RootOf finds the workspace root of the directory dir (a file's
// directory, or the current directory) by the rule above. It returns the
// root, or "" with the status of the torchlsp.toml that failed (State
// Absent when there is none); st.RootMessage says why it is no root.
func RootOf(dir string, store *TrustStore) (root string, st WorkspaceStatus) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, WorkspaceFile)
		if _, err := os.Lstat(p); err == nil {
			st := rootStatus(d, p, store)
			if st.State == Trusted && st.Err == nil {
				return d, st
			}
			return "", st
		}
		if parent := filepath.Dir(d); parent == d {
			return "", WorkspaceStatus{Dir: dir, State: Absent}
		}
	}
}

// rootStatus checks dir/torchlsp.toml at path against the rule, on one
// open descriptor: its kind and owner, then (only when the user ever
// trusted a file there) its content.
func rootStatus(dir, path string, store *TrustStore) WorkspaceStatus {
	st := WorkspaceStatus{Dir: dir, Path: path, State: Untrusted}
	f, info, err := localfile.OpenNoFollow(path)
	if err != nil {
		if errors.Is(err, localfile.ErrNotRegular) {
			st.Err = err
		} else {
			st.Err = fmt.Errorf("read %s: %w", path, err)
		}
		return st
	}
	defer f.Close()
	if !localfile.OwnedByMe(info) {
		uid, _ := localfile.Owner(info)
		st.Err = fmt.Errorf("%s belongs to another user (uid %d), not to you", path, uid)
		return st
	}
	if known, err := store.recorded(path); err != nil || !known {
		st.Err = err
		return st
	}
	data, err := localfile.ReadOpen(f, path, MaxConfigBytes)
	if err != nil {
		st.Err = err
		return st
	}
	st.State, st.Err = store.Check(path, data)
	return st
}

// RootMessage says why the torchlsp.toml st describes makes no workspace
// root, then what follows from that (then: "a run sends only the file
// …"), and how to make it one where trust is all it lacks; "" when it is a
// root or there is none.
func (w WorkspaceStatus) RootMessage(then string) string {
	why := ""
	switch {
	case w.State == Absent:
		return ""
	case w.Err != nil:
		why = w.Err.Error()
	case w.State == Untrusted:
		why = fmt.Sprintf("%s is not trusted", w.Path)
	case w.State == Changed:
		why = fmt.Sprintf("%s changed since you trusted it", w.Path)
	default:
		return ""
	}
	msg := fmt.Sprintf("torchlsp: %s, so %s is not a workspace root", why, w.Dir)
	if then != "" {
		msg += ": " + then
	}
	if w.Err == nil {
		msg += fmt.Sprintf(". Review it, then run `torchlsp trust %s` to make it one", w.Dir)
	}
	return msg
}

package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// TrustState says whether a workspace torchlsp.toml may be used.
type TrustState int

const (
	// Absent: the workspace has no torchlsp.toml.
	Absent TrustState = iota
	// Untrusted: the file was never trusted.
	Untrusted
	// Changed: the file was trusted, but its content changed since.
	Changed
	// Trusted: the file's content is exactly what the user trusted.
	Trusted
)

func (s TrustState) String() string {
	switch s {
	case Absent:
		return "absent"
	case Untrusted:
		return "untrusted"
	case Changed:
		return "changed since trusted"
	case Trusted:
		return "trusted"
	}
	return fmt.Sprintf("TrustState(%d)", int(s))
}

// TrustStore records, in the user's state directory, the hash of each
// workspace config file the user trusted. A workspace file decides which
// commands run on the user's machine (interpreters, ssh hops), so it does
// nothing until trusted, and a change to it needs trust again — the same
// contract as direnv's `allow`.
type TrustStore struct {
	path string
}

// NewTrustStore opens the trust records under d.State.
func NewTrustStore(d Dirs) *TrustStore {
	return &TrustStore{path: filepath.Join(d.State, "trusted.json")}
}

type trustRecords struct {
	Version int               `json:"version"`
	Files   map[string]string `json:"files"` // absolute path → "sha256:<hex>"
}

func (s *TrustStore) load() (trustRecords, error) {
	recs := trustRecords{Version: 1, Files: map[string]string{}}
	data, err := readRegular(s.path, maxRecordsBytes, true)
	if errors.Is(err, os.ErrNotExist) {
		return recs, nil
	}
	if err != nil {
		return recs, fmt.Errorf("read trust records %s: %w", s.path, err)
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		// A damaged record file must not grant trust; it is replaced on the
		// next `torchlsp trust`.
		return trustRecords{Version: 1, Files: map[string]string{}}, fmt.Errorf("trust records %s are damaged (nothing is trusted until `torchlsp trust` rewrites them): %w", s.path, err)
	}
	if recs.Files == nil {
		recs.Files = map[string]string{}
	}
	return recs, nil
}

func (s *TrustStore) save(recs trustRecords) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".trusted-*.json")
	if err != nil {
		return fmt.Errorf("write trust records: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write trust records: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write trust records: %w", err)
	}
	return os.Rename(tmp.Name(), s.path)
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Trust records the current content of file as trusted and returns its
// digest.
func (s *TrustStore) Trust(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	data, err := readRegular(abs, MaxConfigBytes, false)
	if err != nil {
		return "", fmt.Errorf("trust %s: %w", abs, err)
	}
	if _, err := ParseTOML(data, abs); err != nil {
		return "", fmt.Errorf("trust: fix the file first: %w", err)
	}
	recs, err := s.load()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		recs = trustRecords{Version: 1, Files: map[string]string{}}
	}
	d := digest(data)
	recs.Files[abs] = d
	return d, s.save(recs)
}

// Revoke forgets file. Revoking an untrusted file is no error.
func (s *TrustStore) Revoke(file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	recs, err := s.load()
	if err != nil {
		return err
	}
	delete(recs.Files, abs)
	return s.save(recs)
}

// recorded reports whether file has a trust record at all; a file without
// one is untrusted whatever it holds, so it need not be read.
func (s *TrustStore) recorded(file string) (bool, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return false, err
	}
	recs, err := s.load()
	if err != nil {
		return false, err
	}
	_, ok := recs.Files[abs]
	return ok, nil
}

// Check compares data, the current content of file, with the record.
func (s *TrustStore) Check(file string, data []byte) (TrustState, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return Untrusted, err
	}
	recs, err := s.load()
	if err != nil {
		return Untrusted, err
	}
	want, ok := recs.Files[abs]
	switch {
	case !ok:
		return Untrusted, nil
	case want != digest(data):
		return Changed, nil
	default:
		return Trusted, nil
	}
}

// Trusted lists the trusted files, sorted.
func (s *TrustStore) Trusted() ([]string, error) {
	recs, err := s.load()
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, len(recs.Files))
	for f := range recs.Files {
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

// WorkspaceStatus describes a workspace's torchlsp.toml.
type WorkspaceStatus struct {
	Dir   string
	Path  string
	State TrustState
	Err   error // a read or parse error of a trusted file
}

// Message is what the user is told about the file, or "" when all is well.
func (w WorkspaceStatus) Message() string {
	switch {
	case w.Err != nil:
		return fmt.Sprintf("torchlsp: %v", w.Err)
	case w.State == Untrusted:
		return fmt.Sprintf("torchlsp: %s is not trusted, so its targets are ignored: it can make torchlsp run commands on this machine. Review it, then run `torchlsp trust %s`.", w.Path, w.Dir)
	case w.State == Changed:
		return fmt.Sprintf("torchlsp: %s changed since you trusted it, so its targets are ignored. Review it, then run `torchlsp trust %s` again.", w.Path, w.Dir)
	}
	return ""
}

// LoadWorkspace reads dir/torchlsp.toml and returns it as a layer only if
// the user trusts its current content. The file comes with the
// repository, so it is looked at as little as possible before trust is
// settled: a file the user never trusted is not opened at all, and one
// with a trust record is read only if it is a regular file (a symbolic
// link is not followed) of at most MaxConfigBytes. A link to /dev/zero or
// /dev/stdin thus costs one lstat.
func LoadWorkspace(dir string, store *TrustStore) (Layer, WorkspaceStatus) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	path := filepath.Join(dir, WorkspaceFile)
	st := WorkspaceStatus{Dir: dir, Path: path}
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		st.State = Absent
		return Layer{}, st
	}
	if err != nil {
		st.State, st.Err = Untrusted, fmt.Errorf("read %s: %w", path, err)
		return Layer{}, st
	}
	if !info.Mode().IsRegular() {
		// Refused whether trusted or not: trust was given to a file's
		// content, and this is no file to read content from.
		st.State = Untrusted
		if info.Mode()&fs.ModeSymlink != 0 {
			st.Err = fmt.Errorf("%s is a symbolic link: its targets are ignored; torchlsp reads it only as a regular file in the workspace, so replace the link with a copy of the file", path)
		} else {
			st.Err = fmt.Errorf("%s is %s, not a regular file: its targets are ignored", path, kindOf(info.Mode()))
		}
		return Layer{}, st
	}
	known, err := store.recorded(path)
	if err != nil {
		st.State, st.Err = Untrusted, err
		return Layer{}, st
	}
	if !known {
		st.State = Untrusted
		return Layer{}, st
	}
	data, err := readRegular(path, MaxConfigBytes, false)
	if err != nil {
		st.State, st.Err = Untrusted, fmt.Errorf("workspace config: %w", err)
		return Layer{}, st
	}
	st.State, err = store.Check(path, data)
	if err != nil {
		st.Err = err
		return Layer{}, st
	}
	if st.State != Trusted {
		return Layer{}, st
	}
	f, err := ParseTOML(data, path)
	if err != nil {
		st.Err = err
		return Layer{}, st
	}
	return Layer{Source: path, File: f.resolveRelative(filepath.Dir(path))}, st
}

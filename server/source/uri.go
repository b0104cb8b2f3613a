package source

import (
	"net/url"
	"path/filepath"
	"strings"
)

// FilePath returns the local path a file: URI names. It is the one place a
// URI becomes a path. The scheme is matched without regard to case and the
// host may be empty or "localhost" (RFC 8089); any other scheme
// (untitled:, vscode-notebook-cell:, …), a remote host (a UNC share), a
// relative or empty path and a malformed escape give ok == false. It never
// panics.
func FilePath(uri string) (path string, ok bool) {
	if len(uri) < len("file:") || !strings.EqualFold(uri[:len("file:")], "file:") {
		return "", false
	}
	u, err := url.Parse(uri)
	if err != nil || !strings.EqualFold(u.Scheme, "file") || u.Opaque != "" {
		return "", false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", false
	}
	if !strings.HasPrefix(u.Path, "/") || strings.IndexByte(u.Path, 0) >= 0 {
		return "", false
	}
	return filepath.Clean(u.Path), true
}

// FileURI returns the file: URI of an absolute local path, escaped so that
// FilePath reads back the same path.
func FileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.Clean(path)}).String()
}

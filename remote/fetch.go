package remote

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// On-demand reads bring a few source files of one package through the
// resident helper, so that the first answer needs only the files on a
// name's import path while the bulk mirror runs later. The helper enforces
// the same figures (torchlsp_helper.py); these checks are for one that
// does not.
const (
	// MaxReadFiles bounds the paths of one read_files request.
	MaxReadFiles = 64
	// MaxReadBytes bounds the file bytes of one read_files reply (base64
	// makes it a third larger on the wire: under HelperLimits.MaxFrame).
	MaxReadBytes = 2 << 20
	// MaxListFiles bounds a package's listing (MirrorLimits.MaxFiles).
	MaxListFiles = 20_000
)

// ListedFile is one source file of a package's listing.
type ListedFile struct {
	Path string // slash-separated, relative to the site dir: "torch/nn/__init__.py"
	Size int64
}

// FileListing is every .py and .pyi file of a package, with its size.
type FileListing struct {
	Site   string
	Member string
	Files  []ListedFile
}

// FetchedFile is one file's contents as the helper read them.
type FetchedFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Data []byte `json:"data"` // base64 on the wire
}

// FetchResult is a read_files reply: the files read and those refused.
type FetchResult struct {
	Site    string        `json:"site"`
	Files   []FetchedFile `json:"files"`
	Skipped []SkippedFile `json:"skipped"`
}

// ListFiles lists the source files of the top-level package name, with
// their sizes, without importing it.
func (c *Client) ListFiles(ctx context.Context, name string) (FileListing, error) {
	var raw struct {
		Site   string   `json:"site"`
		Member string   `json:"member"`
		Files  [][2]any `json:"files"`
	}
	if err := c.Call(ctx, "list_files", map[string]string{"name": name}, &raw); err != nil {
		return FileListing{}, err
	}
	refuse := func(format string, args ...any) (FileListing, error) {
		return FileListing{}, fmt.Errorf("list_files %s on target %q: %s: refused", name, c.target.Name(), fmt.Sprintf(format, args...))
	}
	if len(raw.Files) > MaxListFiles {
		return refuse("%d files, over the limit of %d", len(raw.Files), MaxListFiles)
	}
	if !cleanAbs(raw.Site) || validMember(raw.Member) != nil {
		return refuse("site %q, member %q", cut(raw.Site, 200), cut(raw.Member, 200))
	}
	l := FileListing{Site: raw.Site, Member: raw.Member, Files: make([]ListedFile, 0, len(raw.Files))}
	for _, f := range raw.Files {
		p, ok1 := f[0].(string)
		size, ok2 := f[1].(float64)
		if !ok1 || !ok2 || size < 0 || size != float64(int64(size)) {
			return refuse("a malformed entry")
		}
		if err := validRel(p, raw.Member, c.limits); err != nil {
			return refuse("%v", err)
		}
		l.Files = append(l.Files, ListedFile{Path: p, Size: int64(size)})
	}
	return l, nil
}

// ReadFiles reads the named files (relative to the package's site dir,
// inside the package) through the helper. Every file returned was asked
// for and its contents match its stated size; at most MaxReadFiles paths
// and MaxReadBytes of contents.
func (c *Client) ReadFiles(ctx context.Context, name string, paths []string) (FetchResult, error) {
	return c.readFiles(ctx, name, paths, "")
}

// ReadImportPath is ReadFiles that also brings the files the helper
// guesses lie on the import path of qualname (the modules that re-export
// it, from the text of the files, a few hops deep; within the same
// bounds), so that one round trip brings what resolving it needs. The
// guess is a prefetch: a file it misses is read later.
func (c *Client) ReadImportPath(ctx context.Context, name, qualname string, paths []string) (FetchResult, error) {
	return c.readFiles(ctx, name, paths, qualname)
}

func (c *Client) readFiles(ctx context.Context, name string, paths []string, follow string) (FetchResult, error) {
	if len(paths) > MaxReadFiles {
		return FetchResult{}, fmt.Errorf("read_files %s: %d paths, over the limit of %d", name, len(paths), MaxReadFiles)
	}
	if paths == nil {
		paths = []string{} // a list on the wire, not null
	}
	params := map[string]any{"name": name, "paths": paths}
	if follow != "" {
		params["follow"] = follow
	}
	var r FetchResult
	if err := c.Call(ctx, "read_files", params, &r); err != nil {
		return FetchResult{}, err
	}
	refuse := func(format string, args ...any) (FetchResult, error) {
		return FetchResult{}, fmt.Errorf("read_files %s on target %q: %s: refused", name, c.target.Name(), fmt.Sprintf(format, args...))
	}
	asked := make(map[string]bool, len(paths))
	for _, p := range paths {
		asked[p] = true
	}
	var total int64
	if len(r.Files) > MaxReadFiles {
		return refuse("%d files, over the limit of %d", len(r.Files), MaxReadFiles)
	}
	seen := make(map[string]bool, len(r.Files))
	for _, f := range r.Files {
		if seen[f.Path] {
			return refuse("%q twice", cut(f.Path, 200))
		}
		seen[f.Path] = true
		switch {
		case asked[f.Path]:
		case follow != "":
			// A guessed file: it must still be a source file of the package.
			if err := validRel(f.Path, name, c.limits); err != nil {
				return refuse("%v", err)
			}
		default:
			return refuse("a file not asked for (%q)", cut(f.Path, 200))
		}
		if int64(len(f.Data)) != f.Size {
			return refuse("%s: %d bytes for a stated %d", f.Path, len(f.Data), f.Size)
		}
		total += f.Size
	}
	if total > MaxReadBytes {
		return refuse("%s of contents, over the limit of %s", byteSize(total), byteSize(MaxReadBytes))
	}
	if len(r.Skipped) > MaxReadFiles {
		return refuse("more refusals than paths")
	}
	for i := range r.Skipped {
		r.Skipped[i].Path, r.Skipped[i].Reason = cut(r.Skipped[i].Path, c.limits.MaxName), cut(r.Skipped[i].Reason, 200)
	}
	return r, nil
}

// validRel checks a listed path: relative, clean, slash-separated, a
// source file inside member.
func validRel(p, member string, l HelperLimits) error {
	switch {
	case p == "" || len(p) > l.MaxName || strings.ContainsRune(p, 0) || strings.Contains(p, "\\"):
		return fmt.Errorf("path %q: empty, too long, or holds NUL or a backslash", cut(p, 200))
	case path.IsAbs(p) || path.Clean(p) != p || strings.HasPrefix(p, "../") || p == "..":
		return fmt.Errorf("path %q: not a clean relative path", cut(p, 200))
	case p != member && !strings.HasPrefix(p, member+"/"):
		return fmt.Errorf("path %q: outside %s", cut(p, 200), member)
	case !strings.HasSuffix(p, ".py") && !strings.HasSuffix(p, ".pyi"):
		return fmt.Errorf("path %q: not a source file", cut(p, 200))
	}
	return nil
}

// MaxSearchWords bounds the words of one search_files request (the
// helper's SEARCH_MAX_WORDS); MaxSearchWord one word's length.
const (
	MaxSearchWords = 64
	MaxSearchWord  = 256
)

// SearchQuery is what search_files looks for: Words, each as a whole word
// (neither neighbour an ASCII letter, digit or underscore), or else a word
// holding Subsequence's bytes in order, ASCII case folded (a word runs
// over ASCII identifier bytes and any byte past ASCII).
type SearchQuery struct {
	Words       []string
	Subsequence string
}

// SearchFiles lists the source files of the top-level package name whose
// text (strings and comments too) holds what q looks for, without
// importing it: the files a cross-reference or workspace-symbol query
// must read, found on the target instead of by reading the whole package
// through the link. A file too large for the helper to read is listed as
// a match. Every path is a source file of the package.
func (c *Client) SearchFiles(ctx context.Context, name string, q SearchQuery) ([]string, error) {
	params := map[string]any{"name": name}
	switch {
	case len(q.Words) > 0 && q.Subsequence != "":
		return nil, fmt.Errorf("search_files %s: words or a subsequence, not both", name)
	case q.Subsequence != "":
		if len(q.Subsequence) > MaxSearchWord || strings.ContainsRune(q.Subsequence, 0) {
			return nil, fmt.Errorf("search_files %s: subsequence %q: over %d bytes, or holds NUL", name, cut(q.Subsequence, 200), MaxSearchWord)
		}
		params["subsequence"] = q.Subsequence
	default:
		if len(q.Words) == 0 || len(q.Words) > MaxSearchWords {
			return nil, fmt.Errorf("search_files %s: %d words, not 1 to %d", name, len(q.Words), MaxSearchWords)
		}
		for _, w := range q.Words {
			if w == "" || len(w) > MaxSearchWord || strings.ContainsRune(w, 0) {
				return nil, fmt.Errorf("search_files %s: word %q: empty, over %d bytes, or holds NUL", name, cut(w, 200), MaxSearchWord)
			}
		}
		params["words"] = q.Words
	}
	var raw struct {
		Site   string   `json:"site"`
		Member string   `json:"member"`
		Paths  []string `json:"paths"`
	}
	if err := c.Call(ctx, "search_files", params, &raw); err != nil {
		return nil, err
	}
	refuse := func(format string, args ...any) ([]string, error) {
		return nil, fmt.Errorf("search_files %s on target %q: %s: refused", name, c.target.Name(), fmt.Sprintf(format, args...))
	}
	if len(raw.Paths) > MaxListFiles {
		return refuse("%d paths, over the limit of %d", len(raw.Paths), MaxListFiles)
	}
	if validMember(raw.Member) != nil {
		return refuse("member %q", cut(raw.Member, 200))
	}
	for _, p := range raw.Paths {
		if err := validRel(p, raw.Member, c.limits); err != nil {
			return refuse("%v", err)
		}
	}
	return raw.Paths, nil
}

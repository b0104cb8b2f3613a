package wsmodel

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/internal/wswalk"
	"github.com/torchlsp/torchlsp/server/localfile"
)

// ImportsOnly answers Reexport as the model does, from the imports of the
// workspace's modules alone, each read the first time a question names
// it: what a references query uses while the model is not built (its
// build waits for the target's flag catalog, which needs torch's whole
// mirror), so that a cold start's first references need not wait for it.
// A module is the file the model would name so: under a root, found as
// the model's walk finds files (no link, no skipped directory), named by
// ModuleOf; of two files of one name, the first path in order.
type ImportsOnly struct {
	ix  *Indexer
	ctx context.Context // bounds the parses; a question has no context of its own

	mu      sync.Mutex       // guards modules
	modules map[string]*File // by module name; nil: the workspace has none
}

// ImportsOnly returns the indexer's imports-only view of the workspace,
// its reads and parses bounded by ctx.
func (ix *Indexer) ImportsOnly(ctx context.Context) *ImportsOnly {
	return &ImportsOnly{ix: ix, ctx: ctx, modules: map[string]*File{}}
}

// Reexport is Model.Reexport over the modules read so far and those the
// question names.
func (o *ImportsOnly) Reexport(module, name string) (string, bool) {
	return reexport(module, name, o.module)
}

// module is the file of the workspace that is module q, read and parsed
// once; nil when there is none or it cannot be read.
func (o *ImportsOnly) module(q string) *File {
	o.mu.Lock()
	f, seen := o.modules[q]
	o.mu.Unlock()
	if seen {
		return f
	}
	f = o.read(q)
	o.mu.Lock()
	defer o.mu.Unlock()
	if g, raced := o.modules[q]; raced {
		return g
	}
	o.modules[q] = f
	return f
}

// read finds and reads the file of module q.
func (o *ImportsOnly) read(q string) *File {
	if o.ctx.Err() != nil {
		return nil
	}
	rel := strings.ReplaceAll(q, ".", "/")
	var candidates []string
	for _, p := range o.ix.Paths {
		for _, c := range []string{rel + ".py", rel + "/__init__.py"} {
			file := filepath.Join(p, filepath.FromSlash(c))
			if ModuleOf(o.ix.Paths, file) == q {
				candidates = append(candidates, file)
			}
		}
	}
	slices.Sort(candidates)
	for _, file := range candidates {
		for _, root := range o.ix.Roots {
			if !Under(root, file) || (o.ix.Exclude != "" && Under(o.ix.Exclude, file)) {
				continue
			}
			inRoot, err := filepath.Rel(root, file)
			if err != nil {
				continue
			}
			if f := o.readIn(root, filepath.ToSlash(inRoot), q); f != nil {
				return f
			}
		}
	}
	return nil
}

// readIn reads rel below root as the model's walk would have found it:
// every directory on the way a real one that wswalk does not skip, the
// file a regular file within the limits.
func (o *ImportsOnly) readIn(root, rel, module string) *File {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	dir := path.Dir(rel)
	for d := dir; d != "."; d = path.Dir(d) {
		st, err := r.Lstat(d)
		if err != nil || !st.IsDir() || wswalk.Skip(r.FS(), d) {
			return nil
		}
	}
	if st, err := r.Lstat(rel); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	fh, _, err := localfile.OpenIn(r, rel)
	if err != nil {
		return nil
	}
	defer fh.Close()
	text, err := localfile.ReadOpen(fh, rel, o.ix.Limits.MaxFileBytes)
	if err != nil {
		return nil
	}
	buf, err := o.ix.Parse(o.ctx, text)
	if err != nil {
		return nil
	}
	return Extract(filepath.Join(root, filepath.FromSlash(rel)), module, buf, diagnose.Facts{}, nil)
}

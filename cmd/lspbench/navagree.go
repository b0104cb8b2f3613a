package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// navagree compares where torchlsp's index (pyindex.DefinitionAt, what
// answers inside a mirrored file and for the user's names that lead into
// a package) and another language server (pyright) place the members
// accessed in files of a site dir. The positions are chosen by a fixed
// rule from the files' syntax alone, not by either answer:
//
//   - declared: x.attr where x (the chain's first name) is a parameter
//     with an annotation (not self or cls) or a variable declared with one;
//   - container: x.attr where the object holds a subscript, or its first
//     name is a for or walrus target;
//   - every: every attribute of the file, one in -every.
//
// Each position counts once, in the first class it fits.

type navPos struct {
	file      string // relative to the site dir
	class     string
	off       int
	line, col int // 0-based; col in UTF-16 units
	text      string
}

type navPlace struct {
	file string // relative to the site dir; absolute when outside it
	line int    // 0-based
}

func navagreeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("navagree", flag.ContinueOnError)
	fs.SetOutput(stderr)
	site := fs.String("site", "", "site dir holding torch/ (both servers read it)")
	var files listFlag
	fs.Var(&files, "file", "a file under -site to sample (repeatable)")
	every := fs.Int("every", 7, "of every attribute of a file, one in this many is sampled")
	list := fs.Bool("list", false, "print every position with both answers")
	timeout := fs.Duration("call-timeout", 2*time.Minute, "limit for one definition request")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	command := fs.Args()
	if *site == "" || len(files) == 0 || len(command) == 0 {
		fmt.Fprintln(stderr, "usage: lspbench navagree -site DIR -file REL... -- SERVER COMMAND...")
		return 2
	}
	abs, err := filepath.Abs(*site)
	if err != nil {
		fmt.Fprintln(stderr, "lspbench:", err)
		return 1
	}
	if err := navagree(ctx, abs, files, *every, *list, *timeout, command, stdout); err != nil {
		fmt.Fprintln(stderr, "lspbench navagree:", err)
		return 1
	}
	return 0
}

func navagree(ctx context.Context, site string, files []string, every int, list bool, timeout time.Duration, command []string, stdout io.Writer) error {
	ix, err := pyindex.Open(site, "")
	if err != nil {
		return err
	}
	type fileSrc struct {
		rel, text string
		src       pyindex.Source
		pos       []navPos
	}
	var srcs []fileSrc
	for _, rel := range files {
		path := filepath.Join(site, filepath.FromSlash(rel))
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", rel, err)
		}
		tree, err := syntax.Parse(data)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		tab := pyscope.New(tree)
		mod, pkg := pyindex.ModuleName(site, path)
		srcs = append(srcs, fileSrc{rel: rel, text: string(data),
			src: pyindex.Source{Module: mod, Package: pkg, Path: path, Rel: rel, Table: tab},
			pos: samplePositions(rel, tab, every)})
	}

	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := lsptest.StartProcess(cmd, lsptest.Options{ClientName: "lspbench", ProcessID: os.Getpid(), RootDir: site, Configuration: true})
	if err != nil {
		return err
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	c := p.Client
	if _, err := c.Handshake(ctx); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}

	type tally struct{ n, agree, miss, wrong, outside, outsideAnswered, none, noneAnswered int }
	byClass := map[string]*tally{}
	var misses []string
	for _, f := range srcs {
		uri := lsptest.FileURI(f.src.Path)
		if err := c.DidOpen(uri, "python", f.text); err != nil {
			return err
		}
		for _, ps := range f.pos {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			locs, err := c.Definition(cctx, uri, uint32(ps.line), uint32(ps.col))
			cancel()
			if err != nil {
				return fmt.Errorf("%s:%d:%d: %w", ps.file, ps.line+1, ps.col, err)
			}
			theirs := placesOf(site, locs)
			ours := ourPlaces(ix, f.src, ps.off)
			tl := byClass[ps.class]
			if tl == nil {
				tl = &tally{}
				byClass[ps.class] = tl
			}
			tl.n++
			verdict := ""
			inTree := 0
			for _, p := range theirs {
				if !filepath.IsAbs(p.file) {
					inTree++
				}
			}
			switch {
			case len(theirs) == 0 && len(ours) == 0:
				tl.none++
				verdict = "both none"
			case len(theirs) == 0:
				tl.noneAnswered++
				verdict = "pyright none, torchlsp answers"
			case inTree == 0:
				tl.outside++
				verdict = "pyright outside the tree"
				if len(ours) > 0 {
					tl.outsideAnswered++
					verdict += ", torchlsp answers"
				}
			case len(ours) == 0:
				tl.miss++
				verdict = "MISS"
			case containsPlace(theirs, ours[0]):
				tl.agree++
				verdict = "agree"
			default:
				tl.wrong++
				verdict = "WRONG"
			}
			if verdict == "MISS" || verdict == "WRONG" {
				misses = append(misses, fmt.Sprintf("%s %s:%d:%d `%s` pyright %v torchlsp %v", verdict, ps.file, ps.line+1, ps.col+1, ps.text, theirs, ours))
			}
			if list {
				fmt.Fprintf(stdout, "%s\t%s:%d:%d\t%s\t%s\tpyright %v\ttorchlsp %v\n", ps.class, ps.file, ps.line+1, ps.col+1, ps.text, verdict, theirs, ours)
			}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = c.Shutdown(sctx)
	_ = c.Exit()

	fmt.Fprintf(stdout, "| class | positions | pyright in the tree | agree | torchlsp none | elsewhere | agreement | pyright outside the tree (torchlsp answers) | pyright none (torchlsp answers) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var all tally
	classes := make([]string, 0, len(byClass))
	for k := range byClass {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	row := func(name string, t *tally) {
		decided := t.agree + t.miss + t.wrong
		pct := 0.0
		if decided > 0 {
			pct = 100 * float64(t.agree) / float64(decided)
		}
		fmt.Fprintf(stdout, "| %s | %d | %d | %d | %d | %d | %.1f %% | %d (%d) | %d (%d) |\n", name, t.n, decided, t.agree, t.miss, t.wrong, pct, t.outside, t.outsideAnswered, t.none+t.noneAnswered, t.noneAnswered)
	}
	for _, k := range classes {
		t := byClass[k]
		row(k, t)
		all.n += t.n
		all.agree += t.agree
		all.miss += t.miss
		all.wrong += t.wrong
		all.outside += t.outside
		all.outsideAnswered += t.outsideAnswered
		all.none += t.none
		all.noneAnswered += t.noneAnswered
	}
	row("all", &all)
	if len(misses) > 0 {
		fmt.Fprintf(stdout, "\nDisagreements:\n\n")
		for _, m := range misses {
			fmt.Fprintf(stdout, "- %s\n", m)
		}
	}
	return nil
}

func containsPlace(ps []navPlace, p navPlace) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

// placesOf are the locations a server answered, relative to the site.
func placesOf(site string, locs []lsptest.Location) []navPlace {
	var out []navPlace
	for _, l := range locs {
		u, err := url.Parse(l.URI)
		if err != nil {
			continue
		}
		path := u.Path
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		if rel, err := filepath.Rel(site, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = filepath.ToSlash(rel)
		}
		out = append(out, navPlace{file: path, line: int(l.Range.Start.Line)})
	}
	return out
}

// ourPlaces are the index's answers at off: the definition and, for a
// union, the others.
func ourPlaces(ix *pyindex.Index, src pyindex.Source, off int) []navPlace {
	d, err := ix.DefinitionAt(src, off)
	if err != nil {
		if !errors.Is(err, pyindex.ErrNotFound) && !errors.Is(err, pyindex.ErrNoName) {
			return []navPlace{{file: "error: " + err.Error()}}
		}
		return nil
	}
	out := []navPlace{place(src, d)}
	for _, a := range d.Also {
		out = append(out, place(src, a))
	}
	return out
}

func place(src pyindex.Source, d pyindex.Definition) navPlace {
	f := d.Symbol.File
	if d.InSource {
		f = src.Rel
	}
	if f == "" {
		f = d.Symbol.Path
	}
	return navPlace{file: f, line: d.Symbol.Line}
}

// samplePositions chooses the attributes of a file by the rule above.
func samplePositions(rel string, tab *pyscope.Table, every int) []navPos {
	tr := tab.Tree()
	src := tr.Src()
	var out []navPos
	k := 0
	for _, o := range tab.Occurrences() {
		if o.Role != pyscope.RoleAttribute {
			continue
		}
		a := tr.Parent(o.Node)
		obj := tr.Child(a, syntax.FieldObject)
		if obj < 0 {
			continue
		}
		class := ""
		root, sub := obj, false
		for {
			switch tr.Kind(root) {
			case syntax.KindAttribute, syntax.KindSubscript, syntax.KindCall, syntax.KindParenthesizedExpression:
				if tr.Kind(root) == syntax.KindSubscript {
					sub = true
				}
				var next int32
				switch tr.Kind(root) {
				case syntax.KindAttribute:
					next = tr.Child(root, syntax.FieldObject)
				case syntax.KindSubscript:
					next = tr.Child(root, syntax.FieldValue)
				case syntax.KindCall:
					next = tr.Child(root, syntax.FieldFunction)
				default:
					next = tr.FirstChild(root)
				}
				if next < 0 {
					root = -1
				} else {
					root = next
				}
				if root >= 0 {
					continue
				}
			}
			break
		}
		if root >= 0 && tr.Kind(root) == syntax.KindIdentifier {
			b := tab.Lookup(tr.Text(root), o.Scope, uint32(tr.Start(root)), nil).Binding
			if b >= 0 {
				bd := tab.Binding(b)
				switch bd.Kind {
				case pyscope.BindParam:
					sc := tab.Scope(bd.Scope)
					p := tr.Parent(bd.Node)
					if sc.Self != b && (tr.Kind(p) == syntax.KindTypedParameter || tr.Kind(p) == syntax.KindTypedDefaultParameter) {
						class = "declared"
					}
				case pyscope.BindAssign:
					if p := tr.Parent(bd.Node); tr.Kind(p) == syntax.KindAssignment && tr.Child(p, syntax.FieldType) >= 0 {
						class = "declared"
					}
				case pyscope.BindFor, pyscope.BindWalrus:
					class = "container"
				}
			}
		}
		if class == "" && sub {
			class = "container"
		}
		if class == "" {
			k++
			if k%every != 0 {
				continue
			}
			class = "every"
		}
		start := tr.Start(o.Node)
		pos := tr.StartPos(o.Node)
		lineStart := start - pos.Col
		out = append(out, navPos{file: rel, class: class, off: start, line: pos.Line,
			col: utf16Len(src[lineStart:start]), text: shortText(tr.Text(a))})
	}
	return out
}

func utf16Len(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func shortText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = "…" + s[len(s)-59:]
	}
	return s
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/torchlsp/torchlsp/server/localfile"
	"io"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// The cross-reference commands: references, symbols, callers and callees,
// in the style of `torchlsp definition` (a local PATH:LINE:COL, then the
// same place on the target), or one JSON document with --format json.

// place is a place of an answer, 1-based, columns in characters.
type place struct {
	Path       string `json:"path"`
	PathBase64 string `json:"path_base64,omitempty"` // the path's bytes, when they are not UTF-8
	Line       int    `json:"line"`
	Col        int    `json:"col"`
	TargetPath string `json:"target_path,omitempty"`
}

// places converts locations, reading each file once for its columns.
type places map[string]*source.Mapper

func (ps places) of(l server.Location) place {
	m, ok := ps[l.Path]
	if !ok {
		text, _ := localfile.Read(l.Path, source.DefaultMaxBytes)
		m = source.NewMapper(string(text))
		ps[l.Path] = m
	}
	line, col, err := m.ToCharColumn(l.Range.Start)
	if err != nil {
		line, col = l.Range.Start.Line+1, l.Range.Start.Column+1
	}
	return place{Path: l.Path, PathBase64: rawBase64(l.Path), Line: line, Col: col, TargetPath: l.TargetPath}
}

func (p place) print(w io.Writer, what string) {
	if what != "" {
		what = "  " + termName(what)
	}
	fmt.Fprintf(w, "%s:%d:%d%s\n", termName(p.Path), p.Line, p.Col, what)
	if p.TargetPath != "" {
		fmt.Fprintf(w, "  on the target: %s:%d\n", termName(p.TargetPath), p.Line)
	}
}

// formatFlag registers --format.
func formatFlag(format *string) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) { fs.StringVar(format, "format", "text", "output format: text or json") }
}

func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return usageError{fmt.Errorf("--format must be text or json")}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runReferences prints every place that names the definition of the
// name at FILE:LINE:COL, its own name first when it is among them.
func runReferences(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var format string
	noDecl := false
	eng, doc, pos, done, err := openAtWith(ctx, "references", args, stderr, func(fs *flag.FlagSet) {
		formatFlag(&format)(fs)
		fs.BoolVar(&noDecl, "no-declaration", false, "leave out the definition's own name")
	})
	if err != nil {
		return err
	}
	defer done()
	if err := checkFormat(format); err != nil {
		return err
	}
	locs, err := eng.References(ctx, doc, pos, !noDecl)
	if err != nil {
		return err
	}
	if len(locs) == 0 {
		return errNoAnswer
	}
	ps := places{}
	out := make([]place, 0, len(locs))
	for _, l := range locs {
		out = append(out, ps.of(l))
	}
	if format == "json" {
		return writeJSON(stdout, out)
	}
	for _, p := range out {
		p.print(stdout, "")
	}
	return nil
}

// symbolJSON is a workspace symbol in --format json.
type symbolJSON struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Container string `json:"container"`
	place
}

// runSymbols prints the symbols of the target's mirrored packages that
// match QUERY, best first.
func runSymbols(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("symbols", flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	var format string
	formatFlag(&format)(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return usageError{fmt.Errorf("want one QUERY")}
	}
	ctx, eng, done, err := engineHere(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer done()
	syms, err := eng.WorkspaceSymbols(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if len(syms) == 0 {
		return fmt.Errorf("%w: no symbol matches %q", errNoAnswer, fs.Arg(0))
	}
	ps := places{}
	out := make([]symbolJSON, 0, len(syms))
	for _, s := range syms {
		out = append(out, symbolJSON{Name: s.Name, Kind: string(s.Kind), Container: s.Container, place: ps.of(s.Location)})
	}
	if format == "json" {
		return writeJSON(stdout, out)
	}
	for _, s := range out {
		s.print(stdout, fmt.Sprintf("%s %s.%s", s.Kind, s.Container, s.Name))
	}
	return nil
}

// callJSON is a caller or callee in --format json: the other function
// and where the calls are.
type callJSON struct {
	Name     string  `json:"name"`
	Kind     string  `json:"kind"`
	Qualname string  `json:"qualname"`
	At       place   `json:"at"`
	Calls    []place `json:"calls"`
}

// runCalls prints the callers (incoming) or callees of the function at
// FILE:LINE:COL: each one's name with its place, then the calls.
func runCalls(ctx context.Context, name string, incoming bool, args []string, stdout, stderr io.Writer) error {
	var format string
	eng, doc, pos, done, err := openAtWith(ctx, name, args, stderr, formatFlag(&format))
	if err != nil {
		return err
	}
	defer done()
	if err := checkFormat(format); err != nil {
		return err
	}
	items, err := eng.PrepareCallHierarchy(ctx, doc, pos)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return fmt.Errorf("%w: not a function or class of a package on the target", errNoAnswer)
	}
	calls := eng.OutgoingCalls
	if incoming {
		calls = eng.IncomingCalls
	}
	links, err := calls(ctx, items[0])
	if err != nil {
		return err
	}
	ps := places{}
	out := make([]callJSON, 0, len(links))
	for _, l := range links {
		at := l.Item.Location
		at.Range = l.Item.SelectionRange
		cj := callJSON{Name: l.Item.Name, Kind: string(l.Item.Kind), Qualname: l.Item.Detail, At: ps.of(at)}
		// Calls are in the caller's file: the other item's for callers,
		// the one asked about for callees.
		in := l.Item.Location
		if !incoming {
			in = items[0].Location
		}
		for _, r := range l.Ranges {
			in.Range = r
			cj.Calls = append(cj.Calls, ps.of(in))
		}
		out = append(out, cj)
	}
	if format == "json" {
		return writeJSON(stdout, out)
	}
	if len(out) == 0 {
		what := "calls"
		if incoming {
			what = "callers"
		}
		fmt.Fprintf(stdout, "%s: no %s found\n", termName(items[0].Detail), what)
		return nil
	}
	for _, c := range out {
		c.At.print(stdout, c.Kind+" "+c.Qualname)
		for _, p := range c.Calls {
			fmt.Fprintf(stdout, "    call at %s:%d:%d\n", termName(p.Path), p.Line, p.Col)
		}
	}
	return nil
}

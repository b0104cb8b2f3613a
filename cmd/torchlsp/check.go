package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/source"
)

// errFindings makes `check` exit 1 without another message.
var errFindings = errors.New("findings")

// runCheck lints Python files against the target's torch, as the editor
// would, for CI and pre-commit.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var c commonFlags
	c.register(fs)
	format := fs.String("format", "text", "output format: text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usageError{fmt.Errorf("--format must be text or json")}
	}
	if fs.NArg() == 0 {
		return usageError{fmt.Errorf("want at least one PATH")}
	}
	files, err := pythonFiles(fs.Args())
	if err != nil {
		return err
	}
	// The workspace is the first path's: the model of its files decides
	// what threads reach across them, as in an editor opened there.
	first, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	if st, err := os.Stat(first); err == nil && st.IsDir() {
		first += "/."
	}
	ctx, eng, done, err := engineAt(ctx, c, workspaceOf(first, stderr, c.quiet), stderr)
	if err != nil {
		return err
	}
	defer done()

	type finding struct {
		File       string   `json:"file"`
		FileBase64 string   `json:"file_base64,omitempty"` // the name's bytes, when they are not UTF-8
		Line       int      `json:"line"`
		Column     int      `json:"column"`
		Severity   string   `json:"severity"`
		Code       string   `json:"code"`
		Message    string   `json:"message"`
		Related    []string `json:"related,omitempty"`
	}
	var all []finding
	serious := false
	for _, path := range files {
		text, err := localfile.Read(path, source.DefaultMaxBytes)
		if err != nil {
			return err
		}
		abs, _ := filepath.Abs(path)
		uri := source.FileURI(abs)
		doc := eng.DidOpen(ctx, uri, "", 1, string(text))
		diags, err := eng.Diagnostics(ctx, doc)
		eng.DidClose(ctx, uri)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		m := doc.Mapper()
		for _, d := range diags {
			line, col, err := m.ToCharColumn(d.Range.Start)
			if err != nil {
				line, col = d.Range.Start.Line+1, d.Range.Start.Column+1
			}
			f := finding{File: path, FileBase64: rawBase64(path), Line: line, Column: col, Severity: severityName(d.Severity), Code: d.Code, Message: d.Message}
			for _, r := range d.Related {
				f.Related = append(f.Related, r.Message)
			}
			all = append(all, f)
			if d.Severity <= server.SeverityWarning {
				serious = true
			}
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if all == nil {
			all = []finding{}
		}
		if err := enc.Encode(all); err != nil {
			return err
		}
	} else {
		for _, f := range all {
			fmt.Fprintf(stdout, "%s:%d:%d: %s: %s [%s]\n", termName(f.File), f.Line, f.Column, f.Severity, termName(f.Message), f.Code)
			for _, r := range f.Related {
				fmt.Fprintf(stdout, "    %s\n", termName(r))
			}
		}
	}
	if serious {
		return errFindings
	}
	return nil
}

func severityName(s server.Severity) string {
	switch s {
	case server.SeverityError:
		return "error"
	case server.SeverityWarning:
		return "warning"
	case server.SeverityInfo:
		return "info"
	}
	return "hint"
}

// pythonFiles expands directories into the .py files under them, skipping
// hidden directories and virtual environments.
func pythonFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() && path != p && (strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules" || name == "venv") {
				return filepath.SkipDir
			}
			// Regular files only: a pipe or a link to a device in the
			// tree is no source to check.
			if d.Type().IsRegular() && strings.HasSuffix(name, ".py") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

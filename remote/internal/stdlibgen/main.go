// Command stdlibgen writes remote/stdlib_names.txt: the union of the
// standard libraries' top-level names of the given interpreters, each
// asked through torchlsp's own helper (stdlib_modules), so the list is
// made exactly as a target's is. Extra names (a newer CPython's
// Python/stdlib_module_names.h, one quoted name a line) may be added
// with -extra.
//
//	go run ./internal/stdlibgen -o stdlib_names.txt ~/.pyenv/versions/3.{8,9,10,11,12,13}.*/bin/python3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/remote"
)

func main() {
	out := flag.String("o", "stdlib_names.txt", "the file to write")
	extra := flag.String("extra", "", "a file of more names, as in CPython's Python/stdlib_module_names.h")
	extraFrom := flag.String("extra-from", "", "where the extra names come from, for the file's header")
	flag.Parse()
	if err := run(*out, *extra, *extraFrom, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "stdlibgen:", err)
		os.Exit(1)
	}
}

func run(out, extra, extraFrom string, pythons []string) error {
	if len(pythons) == 0 {
		return fmt.Errorf("give the interpreters to ask")
	}
	names := map[string]bool{}
	var from []string
	for _, python := range pythons {
		version, got, err := ask(python)
		if err != nil {
			return fmt.Errorf("%s: %w", python, err)
		}
		for _, n := range got.Names {
			names[n] = true
		}
		from = append(from, fmt.Sprintf("CPython %s (%s)", version, got.Source))
	}
	if extra != "" {
		data, err := os.ReadFile(extra)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^\s*"([A-Za-z_][A-Za-z0-9_]*)",`).FindAllStringSubmatch(string(data), -1) {
			names[m[1]] = true
		}
		from = append(from, extraFrom)
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	var b strings.Builder
	b.WriteString("# Top-level modules of the standard library, one a line: the union of\n")
	for _, f := range from {
		fmt.Fprintf(&b, "#   %s\n", f)
	}
	b.WriteString("# Made by remote/internal/stdlibgen (go generate ./remote); do not edit.\n")
	for _, n := range list {
		b.WriteString(n + "\n")
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

func ask(python string) (string, remote.StdlibModules, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := remote.Spec{Name: "stdlibgen", Python: python}
	target := remote.NewLocal(spec)
	defer target.Close()
	c := remote.NewClient(target, spec)
	defer c.Close()
	hello, err := c.Hello(ctx)
	if err != nil {
		return "", remote.StdlibModules{}, err
	}
	got, err := c.StdlibModules(ctx)
	return hello.Python, got, err
}

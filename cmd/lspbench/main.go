// Command lspbench drives any stdio language server through one scripted
// session on a PyTorch training script and measures what a user feels:
// whether go-to-definition lands on the right line of the installed torch,
// how long after start the first right answer comes, warm hover and
// definition latency, and the server's peak memory.
//
// Usage:
//
//	lspbench run [flags] -- SERVER COMMAND LINE...   # one session, one JSON line
//	lspbench report [flags] RESULTS.jsonl...         # markdown tables
//	lspbench growth -site DIR [-site DIR]...          # index and gate-scan cost per tree
//	lspbench navagree -site DIR -file REL... -- SERVER...  # definitions of typed members beside another server
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: lspbench run [flags] -- COMMAND... | lspbench report [flags] FILE...")
		return 2
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr)
	case "report":
		return reportCmd(args[1:], stdout, stderr)
	case "growth":
		return growthCmd(ctx, args[1:], stdout, stderr)
	case "navagree":
		return navagreeCmd(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "lspbench: unknown command %q\n", args[0])
	return 2
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "server label for the table (default: the command's base name)")
	tree := fs.String("tree", "", "target/tree label for the table")
	workspace := fs.String("workspace", "cmd/lspbench/testdata/workspace", "directory holding train.py (copied to a temp dir per run)")
	initOpts := fs.String("init-options", "", "initializationOptions: JSON, or @FILE")
	settings := fs.String("settings", "", "settings object answered to workspace/configuration and sent with didChangeConfiguration: JSON, or @FILE")
	var env, expectEnv listFlag
	fs.Var(&env, "env", "KEY=VALUE added to the server's environment (repeatable)")
	python := fs.String("python", "/usr/bin/python3", "interpreter asked where each symbol is defined (ignored with -facts)")
	fs.Var(&expectEnv, "python-env", "KEY=VALUE for that interpreter (repeatable)")
	facts := fs.String("facts", "", "facts file whose \"where\" map gives expected locations instead of -python")
	treeDir := fs.String("tree-dir", "", "directory holding the torch package the servers read (default: where -python finds it)")
	rounds := fs.Int("rounds", 50, "timed rounds of hover+definition over every symbol, after one warm-up round")
	probe := fs.String("probe", "torch.nn.Linear", "symbol polled for the first correct definition")
	firstWait := fs.Duration("first-wait", 3*time.Minute, "how long to wait for the first correct definition")
	callTimeout := fs.Duration("call-timeout", 60*time.Second, "limit for one request")
	rssEvery := fs.Duration("rss-every", 100*time.Millisecond, "VmHWM polling interval")
	settleFor := fs.Duration("settle", 0, "after the rounds, wait up to this long for the server to go idle before the peak RSS is read (0: do not wait)")
	skip := fs.String("skip", "", "comma-separated symbols to leave out of the session")
	out := fs.String("out", "", "append the result as one JSON line to this file")
	xrefRounds := fs.Int("xref-rounds", 20, "timed rounds of each cross-reference question of xref.py (0: ask none)")
	refsFirst := fs.Bool("refs-first", false, "right after initialize, poll xref.py's first references question until an answer names a place (the cold start's first references), before the definitions")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	command := fs.Args()
	if len(command) == 0 {
		fmt.Fprintln(stderr, "lspbench run: no server command (put it after --)")
		return 2
	}
	queries, err := selectQueries(defaultQueries, *skip)
	if err != nil {
		fmt.Fprintf(stderr, "lspbench run: %v\n", err)
		return 2
	}
	initRaw, err := jsonFlag("init-options", *initOpts)
	if err == nil {
		var settingsRaw json.RawMessage
		settingsRaw, err = jsonFlag("settings", *settings)
		if err == nil {
			err = runOne(ctx, sessionConfig{
				Name: firstNonEmpty(*name, command[0]), Tree: *tree, Command: command, Env: env,
				Workspace: *workspace, InitOptions: initRaw, Settings: settingsRaw,
				Queries: queries, Probe: *probe, Rounds: *rounds, FirstWait: *firstWait,
				CallTimeout: *callTimeout, RSSEvery: *rssEvery, Settle: *settleFor,
				Xref: xrefQueries(*xrefRounds), XrefRounds: *xrefRounds, RefsFirst: *refsFirst,
			}, *python, expectEnv, *facts, *treeDir, *out, stdout, stderr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "lspbench run: %v\n", err)
		return 1
	}
	return 0
}

func runOne(ctx context.Context, cfg sessionConfig, python string, pythonEnv []string, factsPath, treeDir, out string, stdout, stderr io.Writer) error {
	symbols := make([]string, len(cfg.Queries))
	for i, q := range cfg.Queries {
		symbols[i] = q.Symbol
	}
	var facts map[string]where
	var err error
	if factsPath != "" {
		facts, err = whereFromFacts(factsPath)
	} else {
		facts, err = whereFromPython(ctx, python, pythonEnv, symbols)
	}
	if err != nil {
		return err
	}
	asked := make(map[string]where, len(symbols))
	for _, s := range symbols {
		if w, ok := facts[s]; ok {
			asked[s] = w
		}
	}
	var skipped []string
	cfg.Expect, skipped = buildExpectations(asked, treeDir)
	for _, s := range skipped {
		fmt.Fprintf(stderr, "lspbench: not scored: %s\n", s)
	}
	res, err := runSession(ctx, cfg)
	if err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	if out != "" {
		f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
		_, werr := f.Write(append(line, '\n'))
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("results %s: %w", out, werr)
		}
	}
	fmt.Fprintln(stdout, summaryLine(res))
	for _, sym := range sortedKeys(res.Verdicts) {
		v := res.Verdicts[sym]
		fmt.Fprintf(stderr, "  %-45s strict=%-5v lenient=%-5v %s\n", sym, v.Strict, v.Lenient, shortPath(v.Got))
	}
	fmt.Fprintf(stderr, "  largest processes (VmHWM kB): %s\n", strings.Join(res.RSS.Top, " "))
	for _, e := range res.Errors {
		fmt.Fprintf(stderr, "  error: %s\n", e)
	}
	return nil
}

// selectQueries drops the comma-separated symbols in skip from qs.
func selectQueries(qs []query, skip string) ([]query, error) {
	drop := make(map[string]bool)
	for _, s := range strings.Split(skip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			drop[s] = true
		}
	}
	var out []query
	for _, q := range qs {
		if drop[q.Symbol] {
			delete(drop, q.Symbol)
			continue
		}
		out = append(out, q)
	}
	if len(drop) > 0 {
		return nil, fmt.Errorf("-skip: unknown symbols %s", strings.Join(sortedKeys(drop), ", "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-skip leaves no symbols")
	}
	return out, nil
}

func jsonFlag(name, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	data := []byte(v)
	if strings.HasPrefix(v, "@") {
		var err error
		if data, err = os.ReadFile(v[1:]); err != nil {
			return nil, fmt.Errorf("-%s: %w", name, err)
		}
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("-%s: not valid JSON", name)
	}
	return json.RawMessage(data), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// xrefQueries are the cross-reference questions, none when rounds is 0.
func xrefQueries(rounds int) []xrefQuery {
	if rounds <= 0 {
		return nil
	}
	return defaultXref
}

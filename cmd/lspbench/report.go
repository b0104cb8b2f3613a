package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// summaryLine is the one-line human summary of a session.
func summaryLine(r *result) string {
	return fmt.Sprintf("%s [%s]: correct %d/%d strict, %d/%d lenient; first correct %s; hover %s; definition %s; peak RSS %s",
		r.Name, r.Tree, r.Strict, r.Scored, r.Lenient, r.Scored, firstCell(r),
		latencyCell(r.Hover), latencyCell(r.Definition), rssCell(r.RSS))
}

func reportCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	title := fs.String("title", "", "heading of the table")
	command := fs.String("command", "", "the command that produced the results, shown verbatim")
	machine := fs.Bool("machine", true, "print the machine, date and Go version")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var results []*result
	for _, path := range fs.Args() {
		rs, err := readResults(path)
		for _, r := range rs {
			if r.Queries == 0 { // written before the field existed
				r.Queries = len(defaultQueries)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "lspbench report: %v\n", err)
			return 1
		}
		results = append(results, rs...)
	}
	if len(results) == 0 {
		fmt.Fprintln(stderr, "lspbench report: no results")
		return 1
	}
	writeReport(stdout, *title, *command, *machine, results)
	return 0
}

func readResults(path string) ([]*result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	var out []*result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, &r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

func writeReport(w io.Writer, title, command string, machine bool, results []*result) {
	if title != "" {
		fmt.Fprintf(w, "### %s\n\n", title)
	}
	if machine {
		fmt.Fprintf(w, "Machine: %s, %d cores (nproc), Linux %s; %s; date %s.\n\n",
			cpuModel(), runtime.NumCPU(), kernel(), runtime.Version(), results[0].Started.Format(time.DateOnly))
	}
	if command != "" {
		fmt.Fprintf(w, "```\n%s\n```\n\n", command)
	}
	fmt.Fprintln(w, "| server | target/tree | correct strict/lenient | first correct definition after initialize | hover p50/p99 | definition p50/p99 | peak RSS: tree (server) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %s | %d/%d / %d/%d | %s | %s | %s | %s |\n",
			r.Name, r.Tree, r.Strict, r.Scored, r.Lenient, r.Scored, firstCell(r),
			latencyCell(r.Hover), latencyCell(r.Definition), rssCell(r.RSS))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Rounds: %d timed (after one warm-up round) × %d symbols × (hover + definition); first answer polls `%s`.\n\n",
		results[0].Rounds, results[0].Queries, results[0].Probe)
	writeFirstRefs(w, results)
	writeXref(w, results)
	fmt.Fprintln(w, "<details><summary>Where each definition landed (last round)</summary>")
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "**%s — %s** (serverInfo %q; `%s`): hover non-empty %d/%d; initialize %s; %d polls to the first correct answer; largest processes (VmHWM kB): %s; load average %s → %s\n\n",
			r.Name, r.Tree, r.ServerInfo, r.Command, r.HoverNonEmpty, r.Queries, fmtMs(r.InitializeMs), r.FirstPolls, strings.Join(r.RSS.Top, ", "),
			firstNonEmpty(r.LoadBefore, "?"), firstNonEmpty(r.LoadAfter, "?"))
		fmt.Fprintln(w, "| symbol | strict | lenient | answer |")
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, sym := range sortedKeys(r.Verdicts) {
			v := r.Verdicts[sym]
			fmt.Fprintf(w, "| `%s` | %s | %s | `%s` |\n", sym, mark(v.Strict), mark(v.Lenient), shortPath(v.Got))
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "\nerror: %s\n", strings.ReplaceAll(e, "\n", " "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "</details>")
	fmt.Fprintln(w)
}

// writeFirstRefs writes the cold start's first references (-refs-first),
// when a session measured them.
func writeFirstRefs(w io.Writer, results []*result) {
	if !slices.ContainsFunc(results, func(r *result) bool { return r.FirstRefsPolls > 0 }) {
		return
	}
	fmt.Fprintf(w, "| server | first references after initialize: %s | places | requests |\n", strings.TrimPrefix(defaultXref[0].Label, "references: "))
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range results {
		if r.FirstRefsPolls == 0 {
			continue
		}
		first := "never"
		if r.FirstRefs >= 0 {
			first = fmtMs(r.FirstRefs)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d |\n", r.Name, first, r.FirstRefsCount, r.FirstRefsPolls)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Asked from xref.py right after initialize, before any definition, polled until an answer names a place; the first correct definition's time then includes this wait.")
	fmt.Fprintln(w)
}

func firstCell(r *result) string {
	if r.FirstCorrect < 0 {
		return "never"
	}
	return fmtMs(r.FirstCorrect)
}

func latencyCell(s methodStats) string {
	if s.N == 0 {
		return "n/a"
	}
	return fmtMs(s.P50ms) + " / " + fmtMs(s.P99ms)
}

func rssCell(p rssPeak) string {
	return fmt.Sprintf("%.0f MB (%.0f MB)", float64(p.TreeKB)/1024, float64(p.RootKB)/1024)
}

func fmtMs(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}

func mark(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// shortPath keeps an answer readable: the part from the torch package on.
func shortPath(s string) string {
	if i := strings.LastIndex(s, "/torch/"); i >= 0 {
		return "…" + s[i:]
	}
	return s
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func kernel() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(data))
}

// writeXref writes the cross-reference table, when a session asked.
func writeXref(w io.Writer, results []*result) {
	asked := false
	for _, r := range results {
		asked = asked || len(r.Xref) > 0
	}
	if !asked {
		return
	}
	fmt.Fprint(w, "| server |")
	for _, q := range defaultXref {
		fmt.Fprintf(w, " %s |", q.Label)
	}
	fmt.Fprint(w, "\n|---|")
	for range defaultXref {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "| %s |", r.Name)
		for _, q := range defaultXref {
			st, ok := r.Xref[q.Label]
			fmt.Fprintf(w, " %s |", xrefCell(st, ok && len(r.Xref) > 0))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Cross-references (xref.py): p50 / p99 of the timed rounds, the places the answer gave, and the first (untimed) answer's time.")
	fmt.Fprintln(w)
	for _, r := range results {
		for _, q := range defaultXref {
			if st, ok := r.Xref[q.Label]; ok && st.Err != "" {
				fmt.Fprintf(w, "%s, %s: error: %s\n\n", r.Name, q.Label, strings.ReplaceAll(st.Err, "\n", " "))
			}
		}
	}
}

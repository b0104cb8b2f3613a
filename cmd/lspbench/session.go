package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// sessionConfig is one server's scripted session.
type sessionConfig struct {
	Name        string          // row label: the server
	Tree        string          // row label: the target or tree it reads
	Command     []string        // the server's command line
	Env         []string        // extra environment for the server
	Workspace   string          // a directory holding train.py, copied per run
	InitOptions json.RawMessage // initializationOptions
	Settings    json.RawMessage // sections answered to workspace/configuration
	Queries     []query
	Expect      map[string]expectation
	Probe       string        // symbol polled for the first correct definition
	Rounds      int           // timed rounds after one warm-up round
	FirstWait   time.Duration // how long to poll for the first correct answer
	CallTimeout time.Duration // limit for any one request
	RSSEvery    time.Duration
	// Settle, when set, waits after the rounds (this long at most) until
	// the server has been idle for a second, so that the peak RSS counts
	// the background work a short session would end before.
	Settle time.Duration
	// Xref are the cross-reference questions asked after the rounds
	// (xref.go), each XrefRounds times after a first, untimed, one.
	Xref       []xrefQuery
	XrefRounds int
	// RefsFirst polls defaultXref's first references question right
	// after initialize, before the definitions' probe and rounds: the
	// cold start's first references, measured as the first correct
	// definition is (the probe's time then includes it).
	RefsFirst bool
}

// methodStats are the warm latencies of one method.
type methodStats struct {
	N     int     `json:"n"`
	P50ms float64 `json:"p50ms"`
	P99ms float64 `json:"p99ms"`
	MaxMs float64 `json:"maxMs"`
}

// result is what one session measured; it is written as one JSON line.
type result struct {
	Name          string             `json:"name"`
	Tree          string             `json:"tree"`
	Command       string             `json:"command"`
	ServerInfo    string             `json:"serverInfo,omitempty"`
	Rounds        int                `json:"rounds"`
	Queries       int                `json:"queries"` // symbols asked each round
	InitializeMs  float64            `json:"initializeMs"`
	Probe         string             `json:"probe"`
	FirstCorrect  float64            `json:"firstCorrectMs"` // -1: never within FirstWait
	FirstPolls    int                `json:"firstPolls"`
	Hover         methodStats        `json:"hover"`
	Definition    methodStats        `json:"definition"`
	HoverNonEmpty int                `json:"hoverNonEmpty"`
	Scored        int                `json:"scored"`
	Strict        int                `json:"strict"`
	Lenient       int                `json:"lenient"`
	Verdicts      map[string]verdict `json:"verdicts"`
	Errors        []string           `json:"errors,omitempty"`
	RSS           rssPeak            `json:"rss"`
	// Xref are the cross-reference questions' figures, by label.
	Xref map[string]xrefStats `json:"xref,omitempty"`
	// FirstRefs is, with RefsFirst, the time from the initialize request
	// to the first references answer that named a place (-1: none within
	// FirstWait); FirstRefsCount how many places it named, FirstRefsPolls
	// how many requests it took.
	FirstRefs      float64 `json:"firstRefsMs,omitempty"`
	FirstRefsCount int     `json:"firstRefsCount,omitempty"`
	FirstRefsPolls int     `json:"firstRefsPolls,omitempty"`
	// SettledMs is how long after the rounds the server took to go idle
	// (-settle); -1 when it was still busy when -settle ran out.
	SettledMs float64   `json:"settledMs,omitempty"`
	Started   time.Time `json:"started"`
	// LoadBefore and LoadAfter are /proc/loadavg's 1-minute figure around
	// the session: other work on the machine shows up in the latencies.
	LoadBefore string `json:"loadBefore,omitempty"`
	LoadAfter  string `json:"loadAfter,omitempty"`
}

// runSession starts the server, drives the script and shuts it down.
func runSession(ctx context.Context, cfg sessionConfig) (*result, error) {
	ws, err := copyWorkspace(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	scriptPath := filepath.Join(ws, "train.py")
	script, err := os.ReadFile(scriptPath)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	positions := make([]position, len(cfg.Queries))
	for i, q := range cfg.Queries {
		if positions[i], err = locate(string(script), q); err != nil {
			return nil, err
		}
	}

	cmd := exec.CommandContext(ctx, cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &tailBuffer{max: 16 << 10}
	cmd.Stderr = stderr
	res := &result{
		Name: cfg.Name, Tree: cfg.Tree, Command: strings.Join(cfg.Command, " "), Rounds: cfg.Rounds, Queries: len(cfg.Queries),
		Probe: cfg.Probe, FirstCorrect: -1, Verdicts: make(map[string]verdict), Started: time.Now().UTC(),
		LoadBefore: loadAvg(),
	}
	defer func() { res.LoadAfter = loadAvg() }()
	tree := settingsTree(cfg.Settings)
	p, err := lsptest.StartProcess(cmd, lsptest.Options{
		ClientName:            "lspbench",
		ProcessID:             os.Getpid(),
		RootDir:               ws,
		InitializationOptions: cfg.InitOptions,
		Configuration:         true,
		WorkDoneProgress:      true,
		RelatedInformation:    true,
		// As the packaged editors announce them (torchlsp then builds the
		// site in the background); other servers ignore the section.
		Notifications: []string{"torchlsp/status", "torchlsp/site"},
		Sections:      func(name string) any { return section(tree, name) },
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Command[0], err)
	}
	waited := make(chan struct{})
	go func() { _, _ = p.Wait(); close(waited) }()
	defer func() {
		// The whole process group: language servers leave helpers behind.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}()
	rss := watchRSS(ctx, cmd.Process.Pid, cfg.RSSEvery)

	ed := lsptest.NewEditor(p.Client, ws)
	err = drive(ctx, cfg, ed, res, positions)
	if err == nil && cfg.Settle > 0 {
		res.SettledMs = float64(settle(ctx, cmd.Process.Pid, cfg.Settle).Microseconds()) / 1000
	}
	res.RSS = rss.stop()
	if err != nil {
		return res, fmt.Errorf("%s: %w\nserver stderr (tail):\n%s", cfg.Name, err, stderr.String())
	}

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := ed.Shutdown(sctx); err != nil {
		res.Errors = append(res.Errors, "shutdown: "+err.Error())
	}
	_ = ed.Exit()
	_ = ed.Close() // the server's stdin
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		res.Errors = append(res.Errors, "server did not exit within 5s of exit")
	}
	return res, nil
}

// pollFirst asks until ask says it has its answer, every 5 ms (as a user
// would try again), until ctx ends (no error: the answer never came) or
// the server is gone (its error).
func pollFirst(ctx context.Context, ed *lsptest.Editor, ask func() bool) error {
	for ctx.Err() == nil {
		if ask() {
			return nil
		}
		if err := connErr(ed.Client); err != nil {
			return err
		}
		select {
		case <-ed.Done():
			return ed.Err()
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return nil
}

func drive(ctx context.Context, cfg sessionConfig, ed *lsptest.Editor, res *result, positions []position) error {
	start := time.Now()
	ictx, cancel := context.WithTimeout(ctx, cfg.FirstWait)
	defer cancel()
	ir, err := ed.Initialize(ictx)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	res.InitializeMs = ms(time.Since(start))
	if ir.ServerInfo != nil {
		res.ServerInfo = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	if err := ed.Initialized(); err != nil {
		return err
	}
	if len(cfg.Settings) > 0 {
		if err := ed.DidChangeConfiguration(cfg.Settings); err != nil {
			return err
		}
	}
	docURI, err := ed.OpenFile("train.py")
	if err != nil {
		return err
	}
	if cfg.RefsFirst {
		if err := firstReferences(ictx, cfg, ed, res, start); err != nil {
			return err
		}
	}

	probe := -1
	for i, q := range cfg.Queries {
		if q.Symbol == cfg.Probe {
			probe = i
		}
	}
	exp, scored := cfg.Expect[cfg.Probe]
	if probe < 0 || !scored {
		res.Errors = append(res.Errors, fmt.Sprintf("probe %s has no query or expectation: first answer not measured", cfg.Probe))
	} else {
		err := pollFirst(ictx, ed, func() bool {
			res.FirstPolls++
			locs, _, err := definition(ictx, ed.Client, docURI, positions[probe], cfg.CallTimeout)
			if err == nil && judge(exp, locs).Lenient {
				res.FirstCorrect = ms(time.Since(start))
				return true
			}
			return false
		})
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	var hovers, defs []time.Duration
	for round := 0; round <= cfg.Rounds; round++ {
		timed := round > 0
		last := round == cfg.Rounds
		for i, q := range cfg.Queries {
			h, d, err := hover(ctx, ed.Client, docURI, positions[i], cfg.CallTimeout)
			if err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("round %d hover %s: %v", round, q.Symbol, err))
			}
			if timed && err == nil {
				hovers = append(hovers, d)
			}
			if last && h {
				res.HoverNonEmpty++
			}
			locs, d, err := definition(ctx, ed.Client, docURI, positions[i], cfg.CallTimeout)
			if err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("round %d definition %s: %v", round, q.Symbol, err))
			}
			if timed && err == nil {
				defs = append(defs, d)
			}
			if exp, ok := cfg.Expect[q.Symbol]; ok && last {
				res.Verdicts[q.Symbol] = judge(exp, locs)
			}
			if err := connErr(ed.Client); err != nil {
				return err
			}
		}
	}
	res.Hover = stats(hovers)
	res.Definition = stats(defs)
	if len(cfg.Xref) > 0 {
		if err := driveXref(ctx, cfg, ed, res); err != nil {
			return err
		}
	}
	for _, v := range res.Verdicts {
		res.Scored++
		if v.Strict {
			res.Strict++
		}
		if v.Lenient {
			res.Lenient++
		}
	}
	if len(res.Errors) > 20 {
		n := len(res.Errors)
		res.Errors = append(res.Errors[:20], fmt.Sprintf("... and %d more", n-20))
	}
	return nil
}

// location is a definition answer reduced to a local path and a 1-based line.
type location struct {
	Path string
	Line int
}

func textDocumentPosition(docURI string, p position) map[string]any {
	return map[string]any{"textDocument": map[string]string{"uri": docURI}, "position": p}
}

// connErr is why the connection ended, or nil while it is open.
func connErr(c *lsptest.Client) error {
	select {
	case <-c.Done():
		return fmt.Errorf("connection ended: %w", c.Err())
	default:
		return nil
	}
}

// call makes one timed request: the latency is from the request's write
// to the reply's read, without this side's encoding and decoding.
func call(ctx context.Context, c *lsptest.Client, method string, params any, timeout time.Duration) (json.RawMessage, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, d, err := c.RoundTrip(ctx, method, params)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", method, err)
	}
	if r.Error != nil {
		return nil, d, fmt.Errorf("%s: %w", method, r.Error)
	}
	return r.Result, d, nil
}

func definition(ctx context.Context, c *lsptest.Client, docURI string, p position, timeout time.Duration) ([]location, time.Duration, error) {
	raw, d, err := call(ctx, c, "textDocument/definition", textDocumentPosition(docURI, p), timeout)
	if err != nil {
		return nil, d, err
	}
	locs, err := parseLocations(raw)
	return locs, d, err
}

func hover(ctx context.Context, c *lsptest.Client, docURI string, p position, timeout time.Duration) (bool, time.Duration, error) {
	raw, d, err := call(ctx, c, "textDocument/hover", textDocumentPosition(docURI, p), timeout)
	if err != nil {
		return false, d, err
	}
	var h struct {
		Contents any `json:"contents"`
	}
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &h) != nil {
		return false, d, nil
	}
	return hasText(h.Contents), d, nil
}

// hasText reports whether hover contents (MarkupContent, MarkedString or
// a list of them) hold any non-blank text.
func hasText(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t) != ""
	case []any:
		for _, e := range t {
			if hasText(e) {
				return true
			}
		}
	case map[string]any:
		return hasText(t["value"])
	}
	return false
}

// parseLocations accepts Location, Location[], LocationLink[] and null.
func parseLocations(raw json.RawMessage) ([]location, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	type lspRange struct {
		Start position `json:"start"`
	}
	type loc struct {
		URI                  string    `json:"uri"`
		Range                *lspRange `json:"range"`
		TargetURI            string    `json:"targetUri"`
		TargetSelectionRange *lspRange `json:"targetSelectionRange"`
	}
	var list []loc
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("definition result: %w", err)
		}
	} else {
		var one loc
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf("definition result: %w", err)
		}
		list = []loc{one}
	}
	out := make([]location, 0, len(list))
	for _, l := range list {
		u, r := l.URI, l.Range
		if l.TargetURI != "" {
			u, r = l.TargetURI, l.TargetSelectionRange
		}
		if r == nil {
			return nil, fmt.Errorf("definition result: location without a range")
		}
		path, err := uriPath(u)
		if err != nil {
			return nil, err
		}
		out = append(out, location{Path: path, Line: r.Start.Line + 1})
	}
	return out, nil
}

func uriPath(u string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("uri %q: %w", u, err)
	}
	if parsed.Scheme != "file" {
		return "", fmt.Errorf("uri %q: not a file URI", u)
	}
	return parsed.Path, nil
}

// settingsTree decodes the settings object whose sections the servers
// ask for with workspace/configuration (dotted sections walk it).
func settingsTree(settings json.RawMessage) map[string]any {
	var tree map[string]any
	if len(settings) > 0 {
		_ = json.Unmarshal(settings, &tree) // validated when the flag was parsed
	}
	return tree
}

func section(tree map[string]any, name string) any {
	if name == "" {
		if tree == nil {
			return nil
		}
		return tree
	}
	var cur any = tree
	for _, part := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// stats computes nearest-rank percentiles.
func stats(ds []time.Duration) methodStats {
	if len(ds) == 0 {
		return methodStats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return methodStats{N: len(s), P50ms: ms(rank(0.50)), P99ms: ms(rank(0.99)), MaxMs: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func copyWorkspace(src string) (string, error) {
	dst, err := os.MkdirTemp("", "lspbench-ws-")
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		os.RemoveAll(dst)
		return "", fmt.Errorf("workspace: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644)
		}
		if err != nil {
			os.RemoveAll(dst)
			return "", fmt.Errorf("workspace: %w", err)
		}
	}
	return dst, nil
}

// loadAvg returns the 1-minute load average, or "" where unknown.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex // guards buf
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

var _ io.Writer = (*tailBuffer)(nil)

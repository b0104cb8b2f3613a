package site

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is a Python language server (pyright, basedpyright, pylsp) run as
// a child process and driven over stdio the way an editor drives it: it
// answers workspace/configuration from the editor's settings tree, accepts
// capability registrations and progress tokens, and records what the
// server publishes. It is small on purpose: these tests need initialize,
// didOpen, definition and completion, nothing more.
type server struct {
	t        testing.TB
	cmd      *exec.Cmd
	in       io.WriteCloser
	settings map[string]any // the editor's settings tree, e.g. {"python": {"analysis": {...}}}
	stderr   *lockedBuffer

	writeMu sync.Mutex // serialises frames on in
	mu      sync.Mutex // guards pending, nextID, logs, closed
	pending map[int64]chan reply
	nextID  int64
	logs    []string  // window/logMessage lines, for failure reports
	notes   []message // every notification, in order
	closed  bool
	done    chan struct{} // closed when the reader ends
}

type reply struct {
	Result json.RawMessage
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// message is any JSON-RPC frame.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type lockedBuffer struct {
	mu  sync.Mutex // guards b
	b   strings.Builder
	max int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < l.max {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serverConfig is how an editor starts a language server.
type serverConfig struct {
	argv []string
	env  []string
	root string // the workspace folder
	// settings is the editor's settings tree: workspace/configuration is
	// answered from it, and didChangeConfiguration sends it whole.
	settings map[string]any
	// initOptions are the initializationOptions the editor sends.
	initOptions any
}

// startServer starts a server in its own process group and initializes
// it for the workspace, as an editor would.
func startServer(t testing.TB, ctx context.Context, cfg serverConfig) *server {
	t.Helper()
	argv, root, settings := cfg.argv, cfg.root, cfg.settings
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = cfg.env
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &server{t: t, cmd: cmd, settings: settings, pending: map[int64]chan reply{}, done: make(chan struct{}), stderr: &lockedBuffer{max: 64 << 10}}
	cmd.Stderr = s.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", argv[0], err)
	}
	s.in = in
	go s.read(bufio.NewReaderSize(out, 1<<20))
	t.Cleanup(s.stop)

	rootURI := fileURI(root)
	var res json.RawMessage
	err = s.call(ctx, "initialize", map[string]any{
		"processId": os.Getpid(),
		"rootUri":   rootURI,
		"workspaceFolders": []map[string]string{
			{"uri": rootURI, "name": filepath.Base(root)},
		},
		"initializationOptions": cfg.initOptions,
		"capabilities": map[string]any{
			"workspace": map[string]any{"configuration": true, "workspaceFolders": true, "didChangeConfiguration": map[string]any{"dynamicRegistration": true}},
			"textDocument": map[string]any{
				"definition": map[string]any{"linkSupport": false},
				"completion": map[string]any{"completionItem": map[string]any{"snippetSupport": false}},
				"hover":      map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
			},
			"window": map[string]any{"workDoneProgress": true},
			// torchlsp's own notifications, announced as the packaged
			// editors do; other servers ignore the section.
			"experimental": map[string]any{"torchlsp": map[string]any{"notifications": []string{"torchlsp/status", "torchlsp/site"}}},
		},
	}, &res)
	if err != nil {
		t.Fatalf("initialize %s: %v\n%s", argv[0], err, s.stderr.String())
	}
	s.notify("initialized", map[string]any{})
	s.notify("workspace/didChangeConfiguration", map[string]any{"settings": settings})
	return s
}

func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// uriPath turns a file URI back into a path.
func uriPath(t testing.TB, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "file" {
		t.Fatalf("not a file URI: %q", u)
	}
	return p.Path
}

func (s *server) write(m message) error {
	m.JSONRPC = "2.0"
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
		return err
	}
	_, err = s.in.Write(data)
	return err
}

func (s *server) notify(method string, params any) {
	raw, err := json.Marshal(params)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.write(message{Method: method, Params: raw}); err != nil {
		s.t.Errorf("notify %s: %v", method, err)
	}
}

// call sends a request and waits for its reply or ctx's end.
func (s *server) call(ctx context.Context, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan reply, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	if err := s.write(message{ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: error %d: %s", method, r.Error.Code, r.Error.Message)
		}
		if result != nil && len(r.Result) > 0 {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-s.done:
		return fmt.Errorf("%s: server exited: %s", method, s.stderr.String())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (s *server) read(r *bufio.Reader) {
	defer close(s.done)
	for {
		length := -1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				length, _ = strconv.Atoi(v)
			}
		}
		if length < 0 {
			return
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			s.answer(m)
		case m.Method != "":
			s.mu.Lock()
			if len(s.notes) < 10000 {
				s.notes = append(s.notes, m)
			}
			s.mu.Unlock()
			if m.Method == "window/logMessage" {
				var p struct {
					Message string `json:"message"`
				}
				_ = json.Unmarshal(m.Params, &p)
				s.mu.Lock()
				if len(s.logs) < 2000 {
					s.logs = append(s.logs, p.Message)
				}
				s.mu.Unlock()
			}
		default:
			id, err := strconv.ParseInt(string(m.ID), 10, 64)
			if err != nil {
				continue
			}
			s.mu.Lock()
			ch := s.pending[id]
			s.mu.Unlock()
			if ch != nil {
				ch <- reply{Result: m.Result, Error: m.Error}
			}
		}
	}
}

// answer replies to a request from the server, as an editor would.
func (s *server) answer(m message) {
	var result any
	switch m.Method {
	case "workspace/configuration":
		var p struct {
			Items []struct {
				Section string `json:"section"`
			} `json:"items"`
		}
		_ = json.Unmarshal(m.Params, &p)
		out := make([]any, len(p.Items))
		for i, it := range p.Items {
			out[i] = lookupSection(s.settings, it.Section)
		}
		result = out
	case "workspace/workspaceFolders":
		root := s.cmd.Dir
		result = []map[string]string{{"uri": fileURI(root), "name": filepath.Base(root)}}
	default:
		// client/registerCapability, window/workDoneProgress/create, …
		result = nil
	}
	raw, _ := json.Marshal(result)
	if raw == nil {
		raw = []byte("null")
	}
	_ = s.write(message{ID: m.ID, Result: raw})
}

// lookupSection walks the settings tree by a dotted section, as VS Code's
// and Neovim's clients do; a missing section is null.
func lookupSection(tree map[string]any, section string) any {
	if section == "" {
		return tree
	}
	var cur any = tree
	for _, part := range strings.Split(section, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// open sends didOpen for a file on disk.
func (s *server) open(path, languageID string) {
	text, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	s.notify("textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": fileURI(path), "languageId": languageID, "version": 1, "text": string(text)},
	})
}

// lspLocation is a Location or a LocationLink, whichever the server sent.
type lspLocation struct {
	URI       string   `json:"uri"`
	Range     lspRange `json:"range"`
	TargetURI string   `json:"targetUri"`
	// TargetSelectionRange is the name's span in a LocationLink.
	TargetSelectionRange lspRange `json:"targetSelectionRange"`
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

type lspPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

func (l lspLocation) uri() string {
	if l.TargetURI != "" {
		return l.TargetURI
	}
	return l.URI
}

func (l lspLocation) line() int {
	if l.TargetURI != "" {
		return l.TargetSelectionRange.Start.Line
	}
	return l.Range.Start.Line
}

// definition asks for the definition at a 0-based line and UTF-16 column,
// retrying while the server answers nothing (it may still be analysing).
func (s *server) definition(ctx context.Context, path string, line, col int) ([]lspLocation, error) {
	params := map[string]any{
		"textDocument": map[string]string{"uri": fileURI(path)},
		"position":     map[string]int{"line": line, "character": col},
	}
	for {
		var raw json.RawMessage
		if err := s.call(ctx, "textDocument/definition", params, &raw); err != nil {
			return nil, err
		}
		locs, err := decodeLocations(raw)
		if err != nil {
			return nil, err
		}
		if len(locs) > 0 {
			return locs, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("definition at %d:%d: no answer before %w", line+1, col+1, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func decodeLocations(raw json.RawMessage) ([]lspLocation, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '{' {
		var one lspLocation
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, err
		}
		return []lspLocation{one}, nil
	}
	var many []lspLocation
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, err
	}
	return many, nil
}

// completion returns the labels offered at a 0-based line and column.
func (s *server) completion(ctx context.Context, path string, line, col int) ([]string, error) {
	params := map[string]any{
		"textDocument": map[string]string{"uri": fileURI(path)},
		"position":     map[string]int{"line": line, "character": col},
		"context":      map[string]any{"triggerKind": 2, "triggerCharacter": "."},
	}
	var raw json.RawMessage
	if err := s.call(ctx, "textDocument/completion", params, &raw); err != nil {
		return nil, err
	}
	var items []struct {
		Label string `json:"label"`
	}
	if len(raw) > 0 && raw[0] == '{' {
		var list struct {
			Items json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		raw = list.Items
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
	}
	labels := make([]string, len(items))
	for i, it := range items {
		// pylsp labels the items it resolved "name(params)".
		labels[i], _, _ = strings.Cut(it.Label, "(")
	}
	return labels, nil
}

// waitNote waits for a notification of method whose params satisfy ok,
// counting from the after'th notification; it returns its index too.
func (s *server) waitNote(ctx context.Context, method string, after int, ok func(json.RawMessage) bool) (json.RawMessage, int, error) {
	for {
		s.mu.Lock()
		notes := s.notes
		s.mu.Unlock()
		for i := after; i < len(notes); i++ {
			if notes[i].Method == method && ok(notes[i].Params) {
				return notes[i].Params, i, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("no %s notification: %w", method, ctx.Err())
		case <-s.done:
			return nil, 0, fmt.Errorf("no %s notification: server exited: %s", method, s.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hover returns the hover's text at a 0-based line and column.
func (s *server) hover(ctx context.Context, path string, line, col int) (string, error) {
	params := map[string]any{
		"textDocument": map[string]string{"uri": fileURI(path)},
		"position":     map[string]int{"line": line, "character": col},
	}
	var res struct {
		Contents json.RawMessage `json:"contents"`
	}
	if err := s.call(ctx, "textDocument/hover", params, &res); err != nil {
		return "", err
	}
	var mc struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(res.Contents, &mc); err == nil && mc.Value != "" {
		return mc.Value, nil
	}
	return string(res.Contents), nil
}

// logTail returns the server's last log lines and stderr, for a failure.
func (s *server) logTail() string {
	s.mu.Lock()
	logs := s.logs
	if len(logs) > 40 {
		logs = logs[len(logs)-40:]
	}
	out := strings.Join(logs, "\n")
	s.mu.Unlock()
	return out + "\n--- stderr ---\n" + s.stderr.String()
}

// stop shuts the server down politely, then kills its process group.
func (s *server) stop() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_ = s.call(ctx, "shutdown", nil, nil)
	cancel()
	s.notify("exit", nil)
	_ = s.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	// Children (pyright's background analysis workers) share the group.
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.t.Logf("kill process group %d: %v", s.cmd.Process.Pid, err)
	}
}

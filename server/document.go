package server

import (
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// document is one open buffer. Its text is replaced whole on every change;
// parsing happens on first use after a change, so a burst of keystrokes
// costs one parse.
type document struct {
	uri     string
	path    string // local file path, "" for non-file URIs (untitled:, …)
	mu      sync.Mutex
	version int32
	text    []byte
	parsed  *pybuf.Buffer // nil until needed for the current text
	checked *checked      // the last diagnostics computed
	timer   *time.Timer   // pending diagnostics run
}

// buffer returns the parsed buffer for the current text, parsing it if the
// text changed since the last parse.
func (d *document) buffer(p *parserPool) (*pybuf.Buffer, int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.parsed == nil {
		d.parsed = p.parse(d.text)
	}
	return d.parsed, d.version
}

func (d *document) snapshot() ([]byte, int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.text, d.version
}

func (d *document) set(version int32, text []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.version, d.text, d.parsed = version, text, nil
}

// parserPool hands out tree-sitter parsers; each is used by one goroutine
// at a time. Parsers hold C memory, so the pool is a bounded free list
// rather than a sync.Pool, which would drop them without freeing.
type parserPool struct {
	free chan *pybuf.Parser
}

func newParserPool() *parserPool {
	return &parserPool{free: make(chan *pybuf.Parser, runtime.GOMAXPROCS(0))}
}

func (p *parserPool) parse(src []byte) *pybuf.Buffer {
	var parser *pybuf.Parser
	select {
	case parser = <-p.free:
	default:
		var err error
		if parser, err = pybuf.NewParser(); err != nil {
			return pybuf.Parse(src)
		}
	}
	buf := parser.Parse(src)
	select {
	case p.free <- parser:
	default:
		parser.Close()
	}
	return buf
}

// FilePath returns the local path a file:// URI names, or "" for any other
// scheme (untitled:, vscode-notebook-cell:, …) or a malformed URI. It never
// panics.
func FilePath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	if u.Host != "" && u.Host != "localhost" {
		return "" // a UNC path on another machine: not a file we can read
	}
	p := u.Path
	if p == "" || !strings.HasPrefix(p, "/") {
		return ""
	}
	return filepath.Clean(p)
}

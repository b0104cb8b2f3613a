package server

import (
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
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
	// refs are the config-flag references of the current text for the
	// catalog refsCat; every hover and definition asks for them.
	refs    []diagnose.FlagRef
	refsCat *gates.Catalog
	checked *checked    // the last diagnostics computed
	timer   *time.Timer // pending diagnostics run
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

// flagRefs returns the parsed buffer, the text it was parsed from and the
// config-flag references in it for cat, analysing the text once per change
// (the analysis parses the whole document again).
func (d *document) flagRefs(p *parserPool, cat *gates.Catalog) (*pybuf.Buffer, []byte, []diagnose.FlagRef) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.parsed == nil {
		d.parsed = p.parse(d.text)
	}
	if d.refsCat != cat || d.refs == nil {
		d.refs = diagnose.FlagRefs(d.parsed, d.text, cat)
		if d.refs == nil {
			d.refs = []diagnose.FlagRef{}
		}
		d.refsCat = cat
	}
	return d.parsed, d.text, d.refs
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
	d.refs, d.refsCat = nil, nil
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

package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Client keeps one resident helper alive on a target: it starts the helper
// on first use and starts a new one on the first call after the old one
// died. Calls in flight when a helper dies fail; later calls get a fresh
// helper. Repeated quick deaths, and every hang, are spaced out with a
// growing backoff. A call that failed because its helper hung is tried
// once more on a new helper, within the call's own deadline.
type Client struct {
	target Target
	spec   Spec
	limits HelperLimits

	// base bounds the life of helper processes; Close cancels it.
	base   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex // guards the fields below
	helper   *Helper
	starting chan struct{} // non-nil while a start is in progress
	startErr error         // the outcome of the last failed start
	failures int           // consecutive start failures or early deaths
	// hangs counts the helpers in a row killed as hung: each doubles the
	// next one's ping window (ProbeTimeout, up to 8 times), since a busy
	// target can hold a helper silent for long (importing torch holds
	// Python's lock while its C extension loads, pings unanswered).
	hangs   int
	retryAt time.Time // no new start before this
	closed  bool
	// known is the hello of the last helper that started, kept after it
	// ends: what the interpreter is does not change with its process.
	known *Hello
}

const (
	// helperStartTimeout bounds the handshake; over SSH it includes the
	// connection.
	helperStartTimeout = 60 * time.Second
	// helperHealthyAfter is how long a helper must live for its end not to
	// count as a failure.
	helperHealthyAfter = 10 * time.Second
	backoffFirst       = 250 * time.Millisecond
	backoffMax         = 30 * time.Second
)

// NewClient returns a Client for t. Nothing runs until the first call.
func NewClient(t Target, spec Spec) *Client {
	return NewClientWith(t, spec, HelperLimits{})
}

// NewClientWith is NewClient with explicit limits; zero fields take
// DefaultHelperLimits.
func NewClientWith(t Target, spec Spec, limits HelperLimits) *Client {
	base, cancel := context.WithCancel(context.Background())
	return &Client{target: t, spec: spec, limits: limits.withDefaults(), base: base, cancel: cancel}
}

// Call runs method on the target's helper; see Helper.Call. When the
// helper hangs during the call, it is killed and the call runs once more
// on a new helper, if ctx leaves time for it.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	h, err := c.get(ctx)
	if err != nil {
		return err
	}
	err = h.Call(ctx, method, params, result)
	if !errors.Is(err, ErrHelperHung) || ctx.Err() != nil {
		return err
	}
	h2, err2 := c.get(ctx)
	if err2 != nil {
		return fmt.Errorf("%w; restarting it: %w", err, err2)
	}
	return h2.Call(ctx, method, params, result)
}

// Hello returns the handshake of the running helper, starting one if
// needed.
func (c *Client) Hello(ctx context.Context) (Hello, error) {
	h, err := c.get(ctx)
	if err != nil {
		return Hello{}, err
	}
	return h.Hello(), nil
}

// Close stops the helper. Later calls fail.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	h := c.helper
	c.helper = nil
	c.mu.Unlock()
	c.cancel()
	if h != nil {
		return h.Close()
	}
	return nil
}

// get returns a live helper, starting one if there is none.
func (c *Client) get(ctx context.Context) (*Helper, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("helper client for target %q is closed", c.target.Name())
		}
		if h := c.helper; h != nil {
			select {
			case <-h.Done():
				c.helper = nil
				if h.Hung() || time.Since(h.started) < helperHealthyAfter {
					// A hang counts however long the helper lived: a
					// target that keeps hanging gets slower restarts.
					c.noteFailure(h.Err())
				} else {
					c.failures = 0
				}
				if h.Hung() {
					c.hangs++
				} else if time.Since(h.started) >= helperHealthyAfter {
					c.hangs = 0
				}
			default:
				c.mu.Unlock()
				return h, nil
			}
		}
		if c.starting == nil {
			wait := time.Until(c.retryAt)
			if wait > 0 {
				last := c.startErr
				c.mu.Unlock()
				if err := sleepCtx(ctx, wait); err != nil {
					if last == nil {
						last = ErrHelperExited
					}
					return nil, fmt.Errorf("waiting to restart after %w: %w", last, err)
				}
				continue
			}
			c.starting = make(chan struct{})
			go c.start(c.starting, c.nextLimits())
		}
		starting := c.starting
		c.mu.Unlock()

		select {
		case <-starting:
		case <-ctx.Done():
			return nil, fmt.Errorf("start helper on target %q: %w", c.target.Name(), ctx.Err())
		}
		c.mu.Lock()
		h, err := c.helper, c.startErr
		c.mu.Unlock()
		if h == nil {
			if err == nil {
				err = fmt.Errorf("start helper on target %q: no helper", c.target.Name())
			}
			return nil, err
		}
		// Loop: the new helper may already have died.
		select {
		case <-h.Done():
			continue
		default:
			return h, nil
		}
	}
}

// nextLimits are the limits of the next helper: the ping window doubled
// for each helper in a row killed as hung. c.mu held.
func (c *Client) nextLimits() HelperLimits {
	l := c.limits
	l.ProbeTimeout <<= min(c.hangs, 3)
	return l
}

// start runs one helper start outside any caller's context, so that one
// impatient caller does not spoil the start for the others.
func (c *Client) start(done chan struct{}, limits HelperLimits) {
	ctx, cancel := context.WithTimeout(c.base, helperStartTimeout)
	h, err := StartHelperWith(ctx, c.target, c.spec, limits)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(done)
	c.starting = nil
	if err != nil {
		c.noteFailure(err)
		return
	}
	if c.closed {
		go h.Close()
		c.startErr = errors.New("client closed")
		return
	}
	c.helper = h
	c.startErr = nil
	hello := h.Hello()
	c.known = &hello
}

// KnownHello is the handshake of the last helper that started, without
// starting one or waiting; ok false before any has.
func (c *Client) KnownHello() (Hello, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil {
		return Hello{}, false
	}
	return *c.known, true
}

// noteFailure counts a failure and pushes the next start back. c.mu held.
func (c *Client) noteFailure(err error) {
	c.failures++
	c.startErr = err
	d := backoffFirst << min(c.failures-1, 10)
	c.retryAt = time.Now().Add(min(d, backoffMax))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ModuleSpec is where the target's import system finds a module.
type ModuleSpec struct {
	Name                     string   `json:"name"`
	Found                    bool     `json:"found"`
	Origin                   string   `json:"origin"`
	SubmoduleSearchLocations []string `json:"submodule_search_locations"`
	IsPackage                bool     `json:"is_package"`
}

// PackageInfo describes an installed top-level package, found without
// importing it.
type PackageInfo struct {
	Name          string `json:"name"`
	Distribution  string `json:"distribution"`   // distribution that installed it, if known
	Version       string `json:"version"`        // empty when unknown
	VersionSource string `json:"version_source"` // "metadata" or "source"
	Location      string `json:"location"`       // package directory (or module file) on the target
	Site          string `json:"site"`           // the directory holding it
	Member        string `json:"member"`         // its name inside Site: "torch" or "six.py"
	IsPackage     bool   `json:"is_package"`
	Origin        string `json:"origin"`
	FilesCount    int    `json:"files_count"` // .py and .pyi files
	Bytes         int64  `json:"bytes"`       // their total size
	Imported      bool   `json:"imported"`    // whether the helper had imported it
}

// ImportResult reports an import on the target.
type ImportResult struct {
	Module          string  `json:"module"`
	File            string  `json:"file"`
	AlreadyImported bool    `json:"already_imported"`
	Seconds         float64 `json:"seconds"`
}

// Inspection describes a live object on the target.
type Inspection struct {
	Qualname       string   `json:"qualname"` // as asked
	Kind           string   `json:"kind"`     // module, class, function, method, builtin, method_descriptor, property, callable, value
	Type           string   `json:"type"`     // the object's type, dotted
	Module         string   `json:"module"`
	ObjectQualname string   `json:"object_qualname"` // the object's own __qualname__
	File           string   `json:"file"`            // absolute path on the target
	Line           int      `json:"line"`            // 1-based def/class line; 0 when unknown
	Signature      string   `json:"signature"`
	Doc            string   `json:"doc"`
	DocSummary     string   `json:"doc_summary"`
	HasSource      bool     `json:"has_source"`
	Wrapped        bool     `json:"wrapped"`         // whether functools.wraps was unwrapped
	StubCandidates []string `json:"stub_candidates"` // dotted names a .pyi may declare it under
	Repr           string   `json:"repr"`            // for plain values
}

// ConfigValue is one effective entry of a config module.
type ConfigValue struct {
	JSON        json.RawMessage `json:"json"` // the value when it is plain data
	Repr        string          `json:"repr"`
	DefaultRepr string          `json:"default_repr"`
	EnvNames    []string        `json:"env_names"`
}

// Config is the effective state of a config module on the target.
type Config struct {
	Module  string                 `json:"module"`
	File    string                 `json:"file"`
	Source  string                 `json:"source"` // get_config_copy, _config or attributes
	Values  map[string]ConfigValue `json:"values"`
	Missing []string               `json:"missing"` // asked-for keys it does not have
}

// Ping checks that the helper answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.Call(ctx, "ping", nil, nil)
}

// FindSpec asks the target's import system where name lives. For dotted
// names the parent packages are imported.
func (c *Client) FindSpec(ctx context.Context, name string) (ModuleSpec, error) {
	var s ModuleSpec
	err := c.Call(ctx, "find_spec", map[string]string{"name": name}, &s)
	return s.bounded(c.limits), err
}

// PackageInfo describes the installed top-level package name without
// importing it.
func (c *Client) PackageInfo(ctx context.Context, name string) (PackageInfo, error) {
	var p PackageInfo
	if err := c.Call(ctx, "package_info", map[string]string{"name": name}, &p); err != nil {
		return PackageInfo{}, err
	}
	p, err := p.bounded(c.limits)
	if err != nil {
		return PackageInfo{}, fmt.Errorf("helper on target %q: %w", c.target.Name(), err)
	}
	return p, nil
}

// Import imports module in the helper (slow for torch).
func (c *Client) Import(ctx context.Context, module string) (ImportResult, error) {
	var r ImportResult
	err := c.Call(ctx, "import", map[string]string{"module": module}, &r)
	return r.bounded(c.limits), err
}

// Inspect imports what it needs and describes the object at qualname.
func (c *Client) Inspect(ctx context.Context, qualname string) (Inspection, error) {
	var r Inspection
	err := c.Call(ctx, "inspect", map[string]string{"qualname": qualname}, &r)
	return r.bounded(c.limits), err
}

// EvalConfig imports a config module and returns its effective values;
// all of them when keys is empty.
func (c *Client) EvalConfig(ctx context.Context, module string, keys ...string) (Config, error) {
	var r Config
	params := map[string]any{"module": module}
	if len(keys) > 0 {
		params["keys"] = keys
	}
	err := c.Call(ctx, "eval_config", params, &r)
	return r.bounded(c.limits), err
}

// StderrTail returns the last stderr lines of the current helper, for logs.
func (c *Client) StderrTail() []string {
	c.mu.Lock()
	h := c.helper
	c.mu.Unlock()
	if h == nil {
		return nil
	}
	return h.StderrTail()
}

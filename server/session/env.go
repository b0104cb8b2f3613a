package session

import (
	"context"
	"errors"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Level grades what a session tells the user.
type Level int

const (
	LevelError Level = iota + 1
	LevelWarning
	LevelInfo
)

// Env is what a session reports, to whoever owns it: messages a person
// should read, lines for the log, work-done progress, the target's state
// and a package mirrored again. The engine forwards them to its front end.
type Env interface {
	// Message shows something a person should read.
	Message(ctx context.Context, level Level, msg string)
	// Log records a line in the client's log.
	Log(ctx context.Context, level Level, msg string)
	// StartProgress begins a unit of work-done progress.
	StartProgress(ctx context.Context, title string) Progress
	// Status reports the target's state: connecting, indexing, ready or
	// error. An empty version keeps the one known.
	Status(target, version, state, msg string)
	// PackagesChanged says a package of the target was mirrored again
	// (what was built from the old mirror follows).
	PackagesChanged(target string)
}

// Progress reports one unit of work. Percent is 0..100, or -1 when
// unknown.
type Progress interface {
	Report(message string, percent int)
	End(message string)
}

// Work runs what outlives a request (loads, scans, index builds) under
// the owner's lifetime.
type Work interface {
	// Go runs f unless the owner is shutting down, and reports whether
	// it started.
	Go(f func()) bool
	// Context ends when the owner shuts down.
	Context() context.Context
}

// ErrShutDown fails work asked of a session whose owner is shutting down.
var ErrShutDown = errors.New("torchlsp is shutting down")

// Options are what every session of an engine shares.
type Options struct {
	Work Work
	// Parses bounds the source that background parsing (index builds,
	// the flag and op scans of every target) holds in trees at once.
	Parses   *syntax.Budget
	CacheDir string // mirrors live under it
	// ConnectTimeout bounds reaching the target, starting its helper and
	// one on-demand read; InspectTimeout one runtime question (it may
	// import torch, seconds on a GPU host).
	ConnectTimeout time.Duration
	InspectTimeout time.Duration
	// ValidateCache makes a cached mirror wait for the target's word
	// that it is current (one-shot command-line runs).
	ValidateCache bool
	// Bounds on what a target may send; zero fields take remote's
	// defaults.
	MirrorLimits remote.MirrorLimits
	HelperLimits remote.HelperLimits
	// HoverText renders a definition's hover once when the lookup cache
	// keeps it (Definition.Hover), so that hovering the same name again
	// costs a map read; nil keeps none.
	HoverText func(*Definition) string
}

package remote

import (
	"fmt"
	"time"
)

// MirrorLimits bounds what one mirror may take from a target, which may be
// hostile or broken: every figure a target sends is checked against them
// before it costs memory, disk or time. The zero value of a field means
// its default (DefaultMirrorLimits).
type MirrorLimits struct {
	// MaxFiles bounds the source files of one package (torch 2.11 has
	// 2,184). More is an error: a partial mirror would give wrong answers.
	MaxFiles int
	// MaxBytes bounds the bytes of the files kept (torch 2.11: 41 MB).
	// More is an error.
	MaxBytes int64
	// MaxFileBytes bounds one file (torch 2.11's largest is 1.36 MB).
	// Larger files are not written: they are listed in Manifest.Skipped
	// and the rest of the package is mirrored.
	MaxFileBytes int64
	// MaxStreamBytes bounds the unpacked stream as a whole, skipped files
	// and tar framing included, so that a small compressed stream cannot
	// make the reader unpack without end.
	MaxStreamBytes int64
	// StartTimeout bounds the wait from starting the mirror script to its
	// stream header: the process start (over SSH, the channel and the
	// login shell) and the script's walk of the package.
	StartTimeout time.Duration
	// StallTimeout is the longest wait for more bytes once the header has
	// come, and for the script's exit once its stream ended.
	StallTimeout time.Duration
	// Timeout bounds the whole mirror.
	Timeout time.Duration
}

// DefaultMirrorLimits returns the limits Mirror uses: several times what
// torch 2.11 needs, far below what would hurt the editor's machine.
func DefaultMirrorLimits() MirrorLimits {
	return MirrorLimits{
		MaxFiles:       20_000,
		MaxBytes:       256 << 20,
		MaxFileBytes:   4 << 20,
		MaxStreamBytes: 4 << 30,
		StartTimeout:   2 * time.Minute,
		StallTimeout:   60 * time.Second,
		Timeout:        30 * time.Minute,
	}
}

// withDefaults fills the zero fields of l.
func (l MirrorLimits) withDefaults() MirrorLimits {
	d := DefaultMirrorLimits()
	orDefault(&l.MaxFiles, d.MaxFiles)
	orDefault(&l.MaxBytes, d.MaxBytes)
	orDefault(&l.MaxFileBytes, d.MaxFileBytes)
	orDefault(&l.MaxStreamBytes, d.MaxStreamBytes)
	orDefault(&l.StartTimeout, d.StartTimeout)
	orDefault(&l.StallTimeout, d.StallTimeout)
	orDefault(&l.Timeout, d.Timeout)
	return l
}

// orDefault sets a limit that is zero (or negative) to its default.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// HelperLimits bounds what the resident helper may send back. The helper
// enforces the field caps itself (torchlsp_helper.py has the same figures);
// these checks are for a helper that does not.
type HelperLimits struct {
	// MaxFrame bounds one reply frame. A larger frame means a broken or
	// hostile helper: it is stopped, and the next call starts a new one.
	MaxFrame int
	// MaxDoc and MaxDocSummary bound a docstring and its summary in an
	// Inspection, MaxSignature a signature, MaxRepr a value's repr, in
	// bytes; longer ones are cut and marked with a trailing "…". The
	// helper cuts at a quarter of these in characters (16,000, 2,000,
	// 4,000 and 2,000), so its own answers always fit, whatever their
	// script.
	MaxDoc        int
	MaxDocSummary int
	MaxSignature  int
	MaxRepr       int
	// MaxName bounds names and paths (qualname, module, type, file);
	// longer ones are dropped, since a cut path or name is a wrong one.
	MaxName int
	// MaxList bounds lists (stub candidates, sys.path, missing keys).
	MaxList int
	// ProbeAfter is how long a call may go unanswered, with nothing at
	// all heard from the helper, before it is sent a ping; ProbeTimeout
	// is how long that ping may take before the helper counts as hung
	// (stopped, deadlocked) and is killed, so that the next call gets a
	// new one. A helper busy importing torch still answers pings: they
	// are handled on its reader thread.
	ProbeAfter   time.Duration
	ProbeTimeout time.Duration
	// MaxCall bounds one call whatever its context says: a helper that
	// answers pings but never this call (a request thread stuck in an
	// import) fails the call, not the caller forever.
	MaxCall time.Duration
}

// DefaultHelperLimits returns the limits a Client uses.
func DefaultHelperLimits() HelperLimits {
	return HelperLimits{
		MaxFrame:      4 << 20,
		MaxDoc:        64_000,
		MaxDocSummary: 8_000,
		MaxSignature:  16_000,
		MaxRepr:       8_000,
		MaxName:       4_096,
		MaxList:       256,
		ProbeAfter:    5 * time.Second,
		ProbeTimeout:  10 * time.Second,
		MaxCall:       5 * time.Minute,
	}
}

func (l HelperLimits) withDefaults() HelperLimits {
	d := DefaultHelperLimits()
	orDefault(&l.MaxFrame, d.MaxFrame)
	orDefault(&l.MaxDoc, d.MaxDoc)
	orDefault(&l.MaxDocSummary, d.MaxDocSummary)
	orDefault(&l.MaxSignature, d.MaxSignature)
	orDefault(&l.MaxRepr, d.MaxRepr)
	orDefault(&l.MaxName, d.MaxName)
	orDefault(&l.MaxList, d.MaxList)
	orDefault(&l.ProbeAfter, d.ProbeAfter)
	orDefault(&l.ProbeTimeout, d.ProbeTimeout)
	orDefault(&l.MaxCall, d.MaxCall)
	return l
}

// byteSize writes n for messages: "4 MiB", "1.5 GiB", "812 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

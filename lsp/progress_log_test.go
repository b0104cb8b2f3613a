package lsp

import (
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server"
)

// TestProgressLog drives the log fallback with a made-up clock: lines
// only for news, no closer together than the interval, the latest held
// report offered again after the wait.
func TestProgressLog(t *testing.T) {
	t.Parallel()
	var lines []string
	l := &progressLog{title: "torchlsp: torch on gpu", interval: 2 * time.Second, log: func(_ server.MessageType, msg string) {
		lines = append(lines, msg)
	}}
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	pct := func(p uint32) *uint32 { return &p }
	report := func(msg string, p *uint32, now time.Time) time.Duration {
		return l.report(progressValue{Kind: "report", Message: msg, Percentage: p}, now)
	}

	l.begin(progressValue{Kind: "begin"}, t0)
	if wait := report("connecting", nil, at(0.5)); wait != 1500*time.Millisecond {
		t.Errorf("report half a second after begin: wait %v, want 1.5s", wait)
	}
	if wait := report("connecting", nil, at(2)); wait != 0 {
		t.Errorf("held report offered again: wait %v", wait)
	}
	if wait := report("connecting", nil, at(10)); wait != 0 {
		t.Errorf("the same report: wait %v, want it dropped", wait)
	}
	for i := range 96 {
		if wait := report("mirroring torch 2.11", pct(uint32(i)), at(20+float64(i))); wait != 0 {
			t.Errorf("report %d: wait %v", i, wait)
		}
	}
	// The 75% line went at 95 s.
	if wait := report("indexing", nil, at(95.5)); wait != 1500*time.Millisecond {
		t.Errorf("news half a second after the last line: wait %v, want 1.5s", wait)
	}
	if wait := report("indexing", nil, at(97)); wait != 0 {
		t.Errorf("held report offered again: wait %v", wait)
	}
	l.end(progressValue{Kind: "end", Message: "torch 2.11 mirrored"})
	l.end(progressValue{Kind: "end"})

	want := []string{
		"torchlsp: torch on gpu…",
		"torchlsp: torch on gpu: connecting",
		"torchlsp: torch on gpu: mirroring torch 2.11 (0%)",
		"torchlsp: torch on gpu: mirroring torch 2.11 (25%)",
		"torchlsp: torch on gpu: mirroring torch 2.11 (50%)",
		"torchlsp: torch on gpu: mirroring torch 2.11 (75%)",
		"torchlsp: torch on gpu: indexing",
		"torchlsp: torch on gpu: torch 2.11 mirrored",
		"torchlsp: torch on gpu: done",
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssPeak is the memory high-water mark of a process tree, from VmHWM in
// /proc/PID/status. VmHWM only grows, so polling misses nothing of a
// process still alive at the last poll; a child that lives and dies
// between two polls is missed.
type rssPeak struct {
	RootKB int64 `json:"rootKB"` // the server process itself
	TreeKB int64 `json:"treeKB"` // sum over the tree of each process's peak
	MaxKB  int64 `json:"maxKB"`  // the largest single process
	Procs  int   `json:"procs"`  // processes seen in the tree
	// Top names the largest processes, "comm=kB", largest first.
	Top []string `json:"top,omitempty"`
}

// rssWatcher polls a process tree until stopped.
type rssWatcher struct {
	root   int
	mu     sync.Mutex     // guards peaks and names
	peaks  map[int]int64  // pid → VmHWM kB
	names  map[int]string // pid → command name
	cancel context.CancelFunc
	done   chan struct{}
}

func watchRSS(ctx context.Context, root int, every time.Duration) *rssWatcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &rssWatcher{root: root, peaks: make(map[int]int64), names: make(map[int]string), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			w.poll()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// stop polls one last time and returns the peaks.
func (w *rssWatcher) stop() rssPeak {
	w.cancel()
	<-w.done
	w.poll()
	w.mu.Lock()
	defer w.mu.Unlock()
	p := rssPeak{RootKB: w.peaks[w.root], Procs: len(w.peaks)}
	pids := make([]int, 0, len(w.peaks))
	for pid, kb := range w.peaks {
		p.TreeKB += kb
		p.MaxKB = max(p.MaxKB, kb)
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return w.peaks[pids[i]] > w.peaks[pids[j]] })
	for _, pid := range pids[:min(len(pids), 4)] {
		p.Top = append(p.Top, fmt.Sprintf("%s=%d", w.names[pid], w.peaks[pid]))
	}
	return p
}

func (w *rssWatcher) poll() {
	tree := descendants(w.root)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, pid := range tree {
		if kb, ok := vmHWM(pid); ok && kb > w.peaks[pid] {
			// The name is read again with each new peak: a process seen
			// between its fork and its exec is named for its parent
			// ("sh"), and the peak belongs to what it became.
			w.peaks[pid] = kb
			if name := commName(pid); name != "?" || w.names[pid] == "" {
				w.names[pid] = name
			}
		}
	}
}

// descendants returns root and every process below it, from the parent
// pids in /proc/*/stat.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{root}
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentPID(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func parentPID(pid int) (int, bool) {
	fields, ok := statFields(pid)
	if !ok || len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return ppid, err == nil
}

// statFields returns the fields of /proc/PID/stat from the third on
// (state, ppid, ...): the command name before them is in parentheses and
// may hold spaces.
func statFields(pid int) ([][]byte, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, false
	}
	return bytes.Fields(data[i+1:]), true
}

func commName(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(data))
}

func vmHWM(pid int) (int64, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			f := bytes.Fields(v)
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

// settle waits, at most limit, until the process pid has used less than
// 2% of a processor over the last second, and returns how long that
// took; -1 when limit ran out first (or the process is gone).
func settle(ctx context.Context, pid int, limit time.Duration) time.Duration {
	const window = time.Second
	start := time.Now()
	prev, ok := cpuTime(pid)
	if !ok {
		return -1
	}
	t := time.NewTicker(window)
	defer t.Stop()
	for time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return -1
		case <-t.C:
		}
		now, ok := cpuTime(pid)
		if !ok {
			return -1
		}
		if now-prev < window/50 {
			return time.Since(start)
		}
		prev = now
	}
	return -1
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux the kernel ABI allows.
const clockTick = 10 * time.Millisecond

// cpuTime is the processor time pid has used, user and system, from
// fields 14 and 15 of /proc/PID/stat.
func cpuTime(pid int) (time.Duration, bool) {
	fields, ok := statFields(pid)
	if !ok || len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(string(fields[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

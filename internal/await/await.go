//go:build linux

// Package await lets tests wait for what the kernel announces — processes
// ending, files being written — instead of sleeping and looking again.
// Every wait ends with its context, and says what it waited for when it
// does.
package await

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Gone waits until none of the processes find returns runs any more. It
// waits on each through a pidfd (a zombie has ended), then asks find again,
// since they may have started others, until find names none that has not
// ended. A pid seen to end is not waited for again, even if find still
// lists it (a zombie nobody has reaped yet).
func Gone(ctx context.Context, find func() []int) error {
	ended := map[int]bool{}
	for {
		var left []int
		for _, pid := range find() {
			if !ended[pid] {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			if err := exited(ctx, pid); err != nil {
				return fmt.Errorf("waiting for process %d (of %v) to end: %w", pid, left, err)
			}
			ended[pid] = true
		}
	}
}

// exited waits until pid has ended.
func exited(ctx context.Context, pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return nil // gone already
	}
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(fd)
	return readable(ctx, fd, nil)
}

// Group lists the processes of process group pgid that have not ended
// (zombies left out), from /proc.
func Group(pgid int) []int {
	return procs(func(pid int, stat []string) bool {
		return stat[2] == strconv.Itoa(pgid)
	})
}

// Cmdline lists the processes whose command line (its arguments joined by
// spaces) holds s, as pgrep -f does, zombies and this process left out.
func Cmdline(s string) []int {
	self := os.Getpid()
	return procs(func(pid int, _ []string) bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		return err == nil && pid != self && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s)
	})
}

// procs lists the running processes match accepts; stat is the fields of
// /proc/PID/stat after the command's name: state, ppid, pgrp, ….
func procs(match func(pid int, stat []string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		stat := strings.Fields(string(b[i+1:]))
		if len(stat) < 3 || stat[0] == "Z" || stat[0] == "X" {
			continue
		}
		if match(pid, stat) {
			out = append(out, pid)
		}
	}
	return out
}

// Changed waits until ok holds: at once, or after a change under root (a
// file or a directory, watched with its subdirectories, new ones
// included) — a file created, written, moved or removed.
func Changed(ctx context.Context, root string, ok func() bool) error {
	w, err := newWatcher(root)
	if err != nil {
		return err
	}
	defer w.close()
	// The watches are in place: whatever happens from here is seen.
	for !ok() {
		if err := readable(ctx, w.fd, w.consume); err != nil {
			return fmt.Errorf("waiting for a change under %s: %w", root, err)
		}
	}
	return nil
}

// File waits until the file at path exists and ok holds for its contents,
// which it returns. The file's directory must exist.
func File(ctx context.Context, path string, ok func([]byte) bool) ([]byte, error) {
	var data []byte
	err := Changed(ctx, filepath.Dir(path), func() bool {
		b, err := os.ReadFile(path)
		data = b
		return err == nil && ok(b)
	})
	if err != nil {
		return data, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// watcher is an inotify instance on a tree.
type watcher struct {
	fd   int
	dirs map[int32]string // watch descriptor → directory
}

const watchMask = unix.IN_CREATE | unix.IN_CLOSE_WRITE | unix.IN_MODIFY | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_ATTRIB

func newWatcher(root string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &watcher{fd: fd, dirs: map[int32]string{}}
	st, err := os.Stat(root)
	if err != nil {
		w.close()
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	if !st.IsDir() {
		if _, err := unix.InotifyAddWatch(fd, root, watchMask); err != nil {
			w.close()
			return nil, fmt.Errorf("watch %s: %w", root, err)
		}
		return w, nil
	}
	w.addTree(root)
	return w, nil
}

func (w *watcher) close() { unix.Close(w.fd) }

// addTree watches dir and the directories under it; one that went
// meanwhile needs no watch.
func (w *watcher) addTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if wd, err := unix.InotifyAddWatch(w.fd, p, watchMask|unix.IN_ONLYDIR); err == nil {
				w.dirs[int32(wd)] = p
			}
		}
		return nil
	})
}

// consume reads the events waiting and watches the directories they
// announce.
func (w *watcher) consume() {
	var buf [64 << 10]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if n <= 0 || err != nil {
			return
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
			size := unix.SizeofInotifyEvent + int(ev.Len)
			if size > len(b) {
				break
			}
			if ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && ev.Len > 0 {
				if parent, ok := w.dirs[ev.Wd]; ok {
					name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:size]), "\x00")
					w.addTree(filepath.Join(parent, name))
				}
			}
			b = b[size:]
		}
	}
}

// readable waits until fd is readable or ctx ends, then calls drain (when
// set) to take what is there.
func readable(ctx context.Context, fd int, drain func()) error {
	// A pipe the context's end is written to wakes the poll.
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	defer unix.Close(wake[0])
	defer unix.Close(wake[1])
	stop := context.AfterFunc(ctx, func() { _, _ = unix.Write(wake[1], []byte{0}) })
	defer stop()
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if fds[0].Revents != 0 {
			if drain != nil {
				drain()
			}
			return nil
		}
		if fds[1].Revents != 0 {
			return ctx.Err()
		}
	}
}

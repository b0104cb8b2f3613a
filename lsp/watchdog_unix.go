//go:build unix

package lsp

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processAlive reports whether pid names a process. A process that exists
// but belongs to another user (EPERM) is alive. Where signals to other
// processes are filtered (some sandboxes answer ESRCH), /proc decides.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err == nil || errors.Is(err, syscall.EPERM) {
		return true
	}
	_, statErr := os.Stat("/proc/" + strconv.Itoa(pid))
	return statErr == nil
}

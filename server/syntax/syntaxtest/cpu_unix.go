//go:build unix

package syntaxtest

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time the process has used, in all its threads: the
// benchmarks of the quadratic texts report it beside syntax.CPULimit, as a
// busy machine stretches the clock's time but not this.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package fuzzdeadline

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// waited is the time the process's threads have waited, runnable, for a
// CPU: the second field of each thread's /proc schedstat, summed. It is
// zero where the kernel keeps no such count.
func waited() time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		if f := bytes.Fields(b); len(f) >= 2 {
			if ns, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				sum += time.Duration(ns)
			}
		}
	}
	return sum
}

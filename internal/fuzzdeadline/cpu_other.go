//go:build !unix

package fuzzdeadline

import "time"

// processCPU is not measured here: only the clock's limit applies.
func processCPU() time.Duration { return 0 }

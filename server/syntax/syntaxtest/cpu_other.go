//go:build !unix

package syntaxtest

import "time"

// CPUTime is not measured here: it is always zero.
func CPUTime() time.Duration { return 0 }

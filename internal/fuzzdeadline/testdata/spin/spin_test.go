// Package spin holds a fuzz target whose inputs other than its seed are
// slow, for fuzzdeadline's tests: SPIN=cpu makes them compute, SPIN=sleep
// makes them block.
package spin

import (
	"os"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

func FuzzSpin(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	f.Add([]byte("fast"))
	f.Fuzz(func(t *testing.T, b []byte) {
		deadline.Start(t, b)
		if string(b) == "fast" {
			return
		}
		switch os.Getenv("SPIN") {
		case "cpu":
			spinForever()
		case "sleep":
			time.Sleep(time.Hour)
		}
	})
}

// spinForever computes until the process ends.
func spinForever() {
	x := uint64(1)
	for x != 0 {
		x = x*6364136223846793005 + 1442695040888963407
	}
}

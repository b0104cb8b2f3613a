package load

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain skips the whole suite under -short: it starts real servers,
// interpreters and sshd, which the inner loop (make quick) leaves out.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping test/load: it starts real servers and interpreters; run without -short")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

package shquote

import (
	"slices"
	"strings"
	"testing"
)

// Shell hops are recognised however the shell is asked for its command
// string (bash -lc, zsh -ic, a shell inside docker exec), and a shell that
// would not take one is refused with the fix, not run into a confusing
// failure on the target.
func TestShellHops(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix []string
		shell  bool
		err    string // ValidateHop error substring; empty for none
	}{
		{[]string{"bash", "-lc"}, true, ""},
		{[]string{"bash", "-c"}, true, ""},
		{[]string{"/bin/bash", "--login", "-c"}, true, ""},
		{[]string{"zsh", "-ic"}, true, ""},
		{[]string{"sh", "-ec"}, true, ""},
		{[]string{"su", "-", "alice", "-c"}, true, ""},
		{[]string{"docker", "exec", "-i", "trainer", "bash", "-lc"}, true, ""},
		{[]string{"sudo", "-u", "ml", "bash", "-lc"}, true, ""},
		{[]string{"pct", "exec", "200", "--"}, false, ""},
		{[]string{"srun", "--jobid", "1", "--overlap", "--"}, false, ""},
		{[]string{"sh", "-c", `exec "$@"`, "sh"}, false, ""},
		{[]string{"bash", "-l"}, false, "bash -l does not take a command string"},
		{[]string{"bash"}, false, "bash alone would read torchlsp's program from stdin"},
		{[]string{"docker", "exec", "-i", "trainer", "bash"}, false, "bash alone"},
		{[]string{"bash", "-c", "-l"}, false, `use ["bash", "-lc"]`},
	}
	for _, tt := range tests {
		h := HopFromExec(tt.prefix)
		if h.Shell != tt.shell {
			t.Errorf("HopFromExec(%q).Shell = %v, want %v", tt.prefix, h.Shell, tt.shell)
		}
		err := ValidateHop(h)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ValidateHop(%q) = %v, want %q", tt.prefix, err, tt.err)
		}
	}
}

// Through `bash -lc` under the SSH login shell, hostile words reach the
// program exactly.
func TestBashLoginShellHop(t *testing.T) {
	t.Parallel()
	needPython(t)
	line, err := CommandLine([]Hop{HopFromExec([]string{"bash", "-lc"})}, map[string]string{"K": "v w"}, append(slices.Clone(echoArgv), hostileArgs...))
	if err != nil {
		t.Fatal(err)
	}
	got := runShell(t, "/bin/sh", line)
	// env K=... runs the echo program, which prints only argv.
	if !slices.Equal(got, hostileArgs) {
		t.Errorf("through bash -lc: %q reached the program as %q", hostileArgs, got)
	}
}

package hops

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFrontEnds checks the two programs on the GPU host that are ours,
// not the real ones: the `pct` front end over LXC, and the `kubectl`
// stand-in over Docker. Each must take the real program's arguments and
// answer with its messages and exit codes, and pass stdin, output and the
// command's exit status through as the real one does.
func TestFrontEnds(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, hopSet{lxc: true, docker: true})
	py := "import sys; print(sys.stdin.read().upper())"
	for _, tt := range []struct {
		argv   []string
		stdin  string
		code   int
		stdout string // the whole of stdout
		stderr string // a part of stderr
	}{
		{[]string{"pct", "exec", "200", "--", "/usr/bin/python3", "-c", py}, "through pct", 0, "THROUGH PCT\n", ""},
		{[]string{"pct", "exec", "200", "--", "sh", "-c", "exit 4"}, "", 4, "", ""},
		{[]string{"pct", "exec", "200", "hostname"}, "", 0, "ct200\n", ""},
		{[]string{"pct", "exec", "200", "--keep-env", "0", "--", "ls", "-d", "/"}, "", 0, "/\n", ""},
		{[]string{"pct", "exec", "200", "ls", "-l"}, "", 255, "", "Unknown option: l"},
		{[]string{"pct", "exec", "abc", "--", "true"}, "", 255, "", "vmid: type check ('integer') failed - got 'abc'"},
		{[]string{"pct", "exec", "99", "--", "true"}, "", 255, "", "vmid: value must have a minimum value of 100"},
		{[]string{"pct", "exec", "201", "--", "true"}, "", 255, "", "Configuration file 'nodes/"},
		{[]string{"pct", "exec", "200", "--"}, "", 255, "", "missing command"},
		{[]string{"pct", "status", "200"}, "", 0, "status: running\n", ""},
		{[]string{"pct", "frob", "200"}, "", 255, "", "unknown command 'pct frob'"},

		{[]string{"kubectl", "exec", "-i", "-n", "ml", "trainer-0", "-c", "pytorch", "--", "/usr/bin/python3", "-c", py}, "through kubectl", 0, "THROUGH KUBECTL\n", ""},
		// Without -i the command gets no stdin.
		{[]string{"kubectl", "exec", "-n", "ml", "trainer-0", "--", "/usr/bin/python3", "-c", py}, "dropped", 0, "\n", ""},
		{[]string{"kubectl", "exec", "-i", "--namespace=ml", "pod/trainer-0", "--container=pytorch", "--", "cat"}, "long flags", 0, "long flags", ""},
		{[]string{"kubectl", "exec", "-inml", "trainer-0", "-cpytorch", "--", "cat"}, "bundled", 0, "bundled", ""},
		{[]string{"kubectl", "exec", "-it", "-n", "ml", "trainer-0", "--", "cat"}, "no tty", 0, "no tty", "Unable to use a TTY - input is not a terminal"},
		{[]string{"kubectl", "exec", "-n", "ml", "trainer-0", "--", "sh", "-c", "exit 3"}, "", 3, "", "command terminated with exit code 3"},
		{[]string{"kubectl", "exec", "-n", "ml", "trainer-0", "--"}, "", 1, "", "error: you must specify at least one command for the container"},
		{[]string{"kubectl", "exec", "-n", "ml", "trainer-0", "ls"}, "", 1, "", "exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead"},
		{[]string{"kubectl", "exec", "trainer-0", "--", "true"}, "", 1, "", `Error from server (NotFound): pods "trainer-0" not found`},
		{[]string{"kubectl", "exec", "-n", "ml", "trainer-1", "--", "true"}, "", 1, "", `Error from server (NotFound): pods "trainer-1" not found`},
		{[]string{"kubectl", "exec", "-n", "ml", "trainer-0", "-c", "sidecar", "--", "true"}, "", 1, "", `error: unable to upgrade connection: container not found ("sidecar")`},
		{[]string{"kubectl", "exec", "-x", "trainer-0", "--", "true"}, "", 1, "", "error: unknown shorthand flag: 'x' in -x"},
		{[]string{"kubectl", "exec", "--bogus", "trainer-0", "--", "true"}, "", 1, "", "error: unknown flag: --bogus"},
		{[]string{"kubectl", "exec", "-n"}, "", 1, "", "error: flag needs an argument: -n"},
		{[]string{"kubectl", "exec"}, "", 1, "", "error: pod, type/name or --filename must be specified"},
	} {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + tp.net["NS_GPU"], "--"}, tt.argv...)...)
			cmd.Env = append(os.Environ(), tp.gpu.setEnv...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Errorf("exit status %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.stderr)
			}
		})
	}
	tp.requireNothingLeft(t)
}

package shquote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// echoArgv is the far end that quoted command lines must reach byte for
// byte: a real interpreter that writes its arguments back, length-prefixed,
// as the exact bytes it received (os.fsencode undoes surrogateescape).
var echoArgv = []string{"/usr/bin/python3", "-I", "-S", "-c",
	`import os,sys; sys.stdout.buffer.write(b"".join(len(b).to_bytes(4,"big")+b for b in map(os.fsencode, sys.argv[1:])))`}

func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(echoArgv[0]); err != nil {
		t.Skip("no /usr/bin/python3")
	}
}

func decodeArgv(t testing.TB, b []byte) []string {
	t.Helper()
	argv := []string{}
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("truncated echo output %q", b)
		}
		n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		b = b[4:]
		if uint32(len(b)) < n {
			t.Fatalf("truncated echo output")
		}
		argv = append(argv, string(b[:n]))
		b = b[n:]
	}
	return argv
}

// runShell runs line with shell -c and returns the argv that the echo
// program received.
func runShell(t testing.TB, shell, line string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-c", line)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	// A scratch directory: a quoting bug that lets `touch pwned` or a glob
	// run must fail the test, not write into the source tree.
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v; stderr: %s", shell, line, err, stderr.String())
	}
	if entries, _ := os.ReadDir(cmd.Dir); len(entries) != 0 {
		t.Fatalf("%s -c %q created %s", shell, line, entries[0].Name())
	}
	return decodeArgv(t, out)
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"abc", "abc"},
		{"/usr/bin/python3", "/usr/bin/python3"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"-c", "-c"},
		{"a-b", "a-b"},
		{"K=V", "'K=V'"},
		{"~", "'~'"},
		{"$(id)", "'$(id)'"},
		{"a\nb", "'a\nb'"},
		{"ü", "'ü'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// hostileArgs are words that break naive quoting.
var hostileArgs = []string{
	"", " ", "a b", "'", `"`, "\\", "'\\''", "; touch pwned", "$(touch pwned)", "`touch pwned`",
	"$HOME", "${IFS}", "*", "?", "[a]", "~", "~root", "a\nb", "\n", "\t", "-rf", "--", "-",
	"K=V", "!", "!!", "#x", "a&b", "a|b", "a>b", "<", "{a,b}", "héllo wörld", "日本",
	"\xff\xfe", "\x01\x7f", "'$(id)'", `"$(id)"`, "%s%n", "\r\n",
}

func TestJoinReachesProgram(t *testing.T) {
	needPython(t)
	var args []string
	for _, a := range hostileArgs {
		args = append(args, a, "x"+a+"y")
	}
	line := Join(append(slices.Clone(echoArgv), args...))
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		if _, err := os.Stat(shell); err != nil {
			continue
		}
		if got := runShell(t, shell, line); !slices.Equal(got, args) {
			t.Errorf("%s: %q reached the program as %q", shell, args, got)
		}
	}
}

func TestCommandLineTwoShellLayers(t *testing.T) {
	needPython(t)
	hops := []Hop{HopFromExec([]string{"sh", "-c"}), HopFromExec([]string{"bash", "-c"})}
	argv := append(slices.Clone(echoArgv), hostileArgs...)
	line, err := CommandLine(hops, map[string]string{"SECRET": "a 'b' $(c)"}, argv)
	if err != nil {
		t.Fatal(err)
	}
	if got := runShell(t, "/bin/sh", line); !slices.Equal(got, hostileArgs) {
		t.Errorf("through three shells got %q, want %q", got, hostileArgs)
	}
}

// TestCommandLinePython is the production path: a real interpreter prints
// the argv it received and the environment variable it was given.
func TestCommandLinePython(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	var texts []string
	for _, a := range hostileArgs {
		if utf8.ValidString(a) {
			texts = append(texts, a)
		}
	}
	argv := append([]string{py, "-c", "import os,sys,json;print(json.dumps([sys.argv[1:], os.environ['TL_VAL']]))"}, texts...)
	env := map[string]string{"TL_VAL": "x'; touch pwned #"}
	for _, hops := range [][]Hop{nil, {HopFromExec([]string{"sh", "-c"})}} {
		line, err := CommandLine(hops, env, argv)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		var got []any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint([]any{anySlice(texts), env["TL_VAL"]})
		if fmt.Sprint(got) != want {
			t.Errorf("python got %v, want %v", got, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("command created files: %v", entries)
		}
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func TestCommandLineShape(t *testing.T) {
	tests := []struct {
		name string
		hops []Hop
		env  map[string]string
		argv []string
		want string
	}{
		{"plain", nil, nil, []string{"python3", "-c", "print(1)"}, `python3 -c 'print(1)'`},
		{"env sorted", nil, map[string]string{"B": "2", "A": "x y"}, []string{"python3"}, `env 'A=x y' 'B=2' python3`},
		{"pct", []Hop{HopFromExec([]string{"pct", "exec", "200", "--"})}, nil, []string{"/root/venv/bin/python3", "-u"},
			`pct exec 200 -- /root/venv/bin/python3 -u`},
		{"pct env innermost", []Hop{HopFromExec([]string{"pct", "exec", "200", "--"})}, map[string]string{"K": "v"}, []string{"python3"},
			`pct exec 200 -- env 'K=v' python3`},
		{"su shell hop", []Hop{HopFromExec([]string{"su", "-", "alice", "-c"})}, nil, []string{"python3", "a b"},
			`su - alice -c 'python3 '\''a b'\'''`},
		{"docker", []Hop{HopFromExec([]string{"docker", "exec", "-i", "trainer"})}, nil, []string{"python"},
			`docker exec -i trainer python`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CommandLine(tt.hops, tt.env, tt.argv)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name    string
		hop     []string
		env     map[string]string
		argv    []string
		wantErr string
	}{
		{"pct ok", []string{"pct", "exec", "200", "--"}, nil, []string{"python3"}, ""},
		{"pct abs path ok", []string{"/usr/sbin/pct", "exec", "200", "--"}, nil, []string{"python3"}, ""},
		{"pct injection", []string{"pct", "exec", "200; touch /tmp/pwned", "--"}, nil, []string{"python3"}, "must be digits"},
		{"pct subst", []string{"pct", "exec", "$(id)", "--"}, nil, []string{"python3"}, "must be digits"},
		{"pct newline", []string{"pct", "exec", "200\n", "--"}, nil, []string{"python3"}, "must be digits"},
		{"pct option id", []string{"pct", "exec", "-f", "--"}, nil, []string{"python3"}, "must be digits"},
		{"pct no separator", []string{"pct", "exec", "200"}, nil, []string{"python3"}, "want `pct exec VMID --`"},
		{"docker ok", []string{"docker", "exec", "-i", "-u", "root", "-w", "/w", "train-1.x"}, nil, []string{"python3"}, ""},
		{"docker user=", []string{"podman", "exec", "--user=1000:1000", "c1"}, nil, []string{"python3"}, ""},
		{"docker leading dash name", []string{"docker", "exec", "-i", "--", "x"}, nil, []string{"python3"}, "not allowed"},
		{"docker bad option", []string{"docker", "exec", "--env=A=B", "c"}, nil, []string{"python3"}, "not allowed"},
		{"docker injection", []string{"docker", "exec", "-i", "c;id"}, nil, []string{"python3"}, "container name"},
		{"docker no name", []string{"docker", "exec", "-i"}, nil, []string{"python3"}, "name missing"},
		{"docker tail option", []string{"docker", "exec", "c", "-x"}, nil, []string{"python3"}, "would be read as an option"},
		{"kubectl ok", []string{"kubectl", "exec", "-i", "-n", "ml", "trainer-0", "-c", "main", "--"}, nil, []string{"python3"}, ""},
		{"kubectl typed", []string{"kubectl", "exec", "-i", "deploy/trainer", "--"}, nil, []string{"python3"}, ""},
		{"kubectl upper pod", []string{"kubectl", "exec", "Trainer", "--"}, nil, []string{"python3"}, "DNS-1123"},
		{"kubectl bad container", []string{"kubectl", "exec", "p", "-c", "$(id)", "--"}, nil, []string{"python3"}, "DNS-1123"},
		{"kubectl no --", []string{"kubectl", "exec", "p"}, nil, []string{"python3"}, "want `--`"},
		{"lxc ok", []string{"incus", "exec", "c1", "--"}, nil, []string{"python3"}, ""},
		{"srun generic", []string{"srun", "--pty", "-N1"}, nil, []string{"python3"}, ""},
		{"hop program option", []string{"-oProxyCommand=x"}, nil, []string{"python3"}, "not a program name"},
		{"argv option", nil, nil, []string{"-c"}, "would be read as an option"},
		{"argv assignment", nil, map[string]string{"A": "b"}, []string{"X=1"}, "assignment"},
		{"argv empty", nil, nil, nil, "empty command"},
		{"argv NUL", nil, nil, []string{"python3", "a\x00b"}, "NUL"},
		{"env key", nil, map[string]string{"A B": "x"}, []string{"python3"}, "variable name"},
		{"env NUL value secret", nil, map[string]string{"TOKEN": "hunter2\x00"}, []string{"python3"}, "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hops []Hop
			if tt.hop != nil {
				hops = []Hop{HopFromExec(tt.hop)}
			}
			_, err := CommandLine(hops, tt.env, tt.argv)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("no error, want %q", tt.wantErr)
			case err != nil && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q, want it to contain %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Fatalf("error leaks an env value: %v", err)
			}
		})
	}
}

// FuzzCommandLine checks that arbitrary argv (NUL excluded: argv cannot
// carry it) reaches the program byte for byte through one and through two
// shell layers.
func FuzzCommandLine(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	needPython(f)
	f.Add("a", "b c", "$(touch pwned)")
	f.Add("'", `"\`, "`id`")
	f.Add("-rf", "\n", "*")
	f.Add("", "héllo", "\xff")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		deadline.Start(t, a, b, c)
		args := []string{a, b, c}
		for _, s := range args {
			if strings.IndexByte(s, 0) >= 0 || len(s) > 4096 {
				t.Skip()
			}
		}
		argv := append(slices.Clone(echoArgv), args...)
		env := map[string]string{"SHQUOTE_FUZZ": c}
		dir := t.TempDir()
		for _, hops := range [][]Hop{nil, {HopFromExec([]string{"sh", "-c"})}} {
			line, err := CommandLine(hops, env, argv)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
			cmd.Dir = dir
			out, err := cmd.Output()
			cancel()
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if got := decodeArgv(t, out); !slices.Equal(got, args) {
				t.Fatalf("hops %v: got %q, want %q", hops, got, args)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("command created %s", filepath.Join(dir, entries[0].Name()))
		}
	})
}

func BenchmarkCommandLine(b *testing.B) {
	hops := []Hop{HopFromExec([]string{"pct", "exec", "200", "--"})}
	env := map[string]string{"PYTHONUNBUFFERED": "1", "TORCH_HOME": "/root/.cache/torch"}
	argv := []string{"/root/venv/bin/python3", "-u", "-c", "import sys; exec(sys.stdin.read())"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CommandLine(hops, env, argv); err != nil {
			b.Fatal(err)
		}
	}
}

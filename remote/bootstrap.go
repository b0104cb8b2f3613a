package remote

import (
	_ "embed"
	"fmt"
	"io"
	"strconv"
)

//go:embed helper/torchlsp_helper.py
var helperSource []byte

//go:embed helper/torchlsp_mirror.py
var mirrorSource []byte

// bootstrapCode reads a length line and that many bytes of program source
// from stdin and runs it; whatever follows on stdin belongs to the program.
// It carries no user data, so the argv is the same for every target.
const bootstrapCode = "import sys;n=int(sys.stdin.buffer.readline());" +
	"exec(compile(sys.stdin.buffer.read(n),sys.argv[1],'exec'),{'__name__':'__torchlsp__'})"

// pythonOf returns the interpreter the Spec names, "python3" by default.
func pythonOf(spec Spec) string {
	if spec.Python == "" {
		return "python3"
	}
	return spec.Python
}

// bootstrapCommand is the command that runs an embedded program named name.
func bootstrapCommand(spec Spec, name string) Command {
	return ProgramCommand(pythonOf(spec), spec.Env, name)
}

// ProgramCommand starts python so that it runs a program sent on its stdin
// with SendProgram; name is the program's file name in tracebacks. Scripts
// never travel in argv. -u keeps the streams unbuffered; -B keeps the
// target free of .pyc files. -I is not used: it would drop the user's
// PYTHONPATH and user site.
func ProgramCommand(python string, env map[string]string, name string) Command {
	return Command{
		Argv: []string{python, "-u", "-B", "-c", bootstrapCode, name},
		Env:  env,
	}
}

// SendProgram writes a program to a ProgramCommand's stdin, framed as its
// bootstrap expects; whatever is written after it is the program's input.
func SendProgram(w io.Writer, source []byte) error {
	head := strconv.Itoa(len(source)) + "\n"
	if _, err := io.WriteString(w, head); err != nil {
		return fmt.Errorf("send program: %w", err)
	}
	if _, err := w.Write(source); err != nil {
		return fmt.Errorf("send program: %w", err)
	}
	return nil
}

package remote

import (
	_ "embed"
	"fmt"
	"io"
	"strconv"

	"github.com/torchlsp/torchlsp/remote/pystart"
)

//go:embed helper/torchlsp_helper.py
var helperSource []byte

//go:embed helper/torchlsp_mirror.py
var mirrorSource []byte

// bootstrapCode reads a length line and that many bytes of program source
// from stdin and runs it; whatever follows on stdin belongs to the program.
// It carries no user data, so the argv is the same for every target. It
// runs after pystart.Prologue, which has taken the start directory off
// sys.path and left it.
const bootstrapCode = "n=int(sys.stdin.buffer.readline());" +
	"exec(compile(sys.stdin.buffer.read(n),sys.argv[1],'exec'),{'__name__':'__torchlsp__'})"

// pythonOf returns the interpreter the Spec names, "python3" by default.
func pythonOf(spec Spec) string {
	if spec.Python == "" {
		return "python3"
	}
	return spec.Python
}

// Interpreter is how a target's Python is started: the program, its
// environment, and whether it sees the user's site-packages.
type Interpreter struct {
	Python   string // "python3" when empty
	Env      map[string]string
	UserSite bool
}

// Interpreter returns the interpreter the Spec configures.
func (s Spec) Interpreter() Interpreter {
	return Interpreter{Python: pythonOf(s), Env: s.Env, UserSite: s.UserSite}
}

// bootstrapCommand is the command that runs an embedded program named name.
func bootstrapCommand(spec Spec, name string) Command {
	return ProgramCommand(spec.Interpreter(), name)
}

// ProgramCommand starts the interpreter so that it runs a program sent on
// its stdin with SendProgram; name is the program's file name in
// tracebacks. Scripts never travel in argv. The interpreter imports
// nothing from the directory it starts in, and works in "/" (see
// pystart); it sees the user site only if in.UserSite.
func ProgramCommand(in Interpreter, name string) Command {
	python := in.Python
	if python == "" {
		python = "python3"
	}
	return Command{
		Argv: pystart.Argv(python, in.UserSite, bootstrapCode, name),
		Env:  pystart.Env(in.Env),
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

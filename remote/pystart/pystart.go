// Package pystart says how torchlsp starts a Python interpreter on a
// target, so that nothing in the directory it starts in is imported: that
// directory is often a workspace, whose files torchlsp never runs.
//
// What Python imports before the first line of a -c program, and from
// where (CPython 3.8 to 3.13 alike):
//
//   - encodings, codecs, io, abc, site and what site imports (os,
//     stat, posixpath, _sitebuiltins, …), searched in PYTHONPATH, then the
//     standard library. A relative or empty PYTHONPATH entry names the
//     directory the interpreter starts in; site makes it absolute there.
//     This is why local targets start in a directory no workspace
//     controls, and why the configuration refuses such entries where it
//     cannot make them absolute itself (server/config).
//   - the .pth files of site-packages and of the user's site, and any code
//     they hold; then sitecustomize, and usercustomize from the user site,
//     wherever sys.path finds them. -s leaves the user site out (unless the
//     target asks for it: remote.Spec.UserSite).
//   - the directory the interpreter starts in is put first on sys.path, as
//     '', only after site has run, just before the -c program. -P (3.11)
//     would leave it out, but older interpreters refuse -P and the version
//     is not known before the interpreter answers; -I would also drop
//     PYTHONPATH. So the program's first statement, Prologue, removes it
//     (with every other relative entry) before anything else is imported:
//     sys is built in, and os was imported by site from the clean path.
//     PYTHONSAFEPATH=1 would do the same on 3.11 but would be inherited by
//     the processes a repro's user code starts, changing their sys.path.
//
// The prologue then changes to "/", so that nothing later resolves a
// relative path against the start directory either (a repro that sends
// its workspace changes into its own temporary copy afterwards).
package pystart

// Prologue is the Python statement every program torchlsp runs starts
// with: sys.path keeps only absolute entries (the '' that -c put first is
// the directory the interpreter started in), and the working directory
// becomes "/".
const Prologue = "import sys;sys.path[:]=[p for p in sys.path if isinstance(p,str) and p.startswith('/')];" +
	"import os;os.chdir('/')"

// Argv is the command line that runs code, a Python program in one
// argument, with Prologue before it: python -s -u -B -c PROLOGUE;CODE
// ARGS…, without -s when userSite. -u keeps the streams unbuffered, -B
// keeps the target free of .pyc files.
func Argv(python string, userSite bool, code string, args ...string) []string {
	argv := []string{python}
	if !userSite {
		argv = append(argv, "-s")
	}
	argv = append(argv, "-u", "-B", "-c", Prologue+"\n"+code)
	return append(argv, args...)
}

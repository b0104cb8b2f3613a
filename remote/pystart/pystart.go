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
//   - the directory the interpreter starts in is put first on sys.path,
//     as an empty string, after site has run. Up to 3.12 nothing is
//     imported between that and the first statement of the -c program;
//     3.13 imports linecache there (to keep the -c source for
//     tracebacks), from that directory. -P (3.11) leaves the directory
//     out, but older interpreters refuse -P and the version is not known
//     before the interpreter answers; -I would also drop PYTHONPATH.
//     PYTHONSAFEPATH, read by 3.11 and later and ignored before, is -P
//     where the interpreter has it: Env sets it. For 3.8 to 3.10, Prologue,
//     the program's first statement, takes the directory off sys.path
//     (with every other relative entry) before anything else is imported:
//     sys is built in, and os was imported by site from the clean path.
//     Prologue then unsets the PYTHONSAFEPATH Env set, so that the
//     processes a repro's user code starts get the sys.path they would
//     get without torchlsp.
//
// The prologue then changes to "/", so that nothing later resolves a
// relative path against the start directory either (a repro that sends
// its workspace changes into its own temporary copy afterwards).
package pystart

// safePath is the value Env gives PYTHONSAFEPATH (any non-empty value
// turns it on), so that Prologue unsets only what Env set.
const safePath = "torchlsp"

// Prologue is the Python every program torchlsp runs starts with:
// sys.path keeps only absolute entries (the empty string that -c put
// first names the directory the interpreter started in), the
// PYTHONSAFEPATH Env set is unset, and the working directory becomes "/".
const Prologue = "import sys;sys.path[:]=[p for p in sys.path if isinstance(p,str) and p.startswith('/')];import os\n" +
	"if os.environ.get('PYTHONSAFEPATH')=='" + safePath + "':del os.environ['PYTHONSAFEPATH']\n" +
	"os.chdir('/')"

// Env returns env with PYTHONSAFEPATH set, unless env sets it already; the
// interpreter started with Argv must get it.
func Env(env map[string]string) map[string]string {
	if _, ok := env["PYTHONSAFEPATH"]; ok {
		return env
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	out["PYTHONSAFEPATH"] = safePath
	return out
}

// Argv is the command line that runs code, a Python program in one
// argument, with Prologue before it: python -s -u -B -c PROLOGUE CODE
// ARGS…, without -s when userSite. -u keeps the streams unbuffered, -B
// keeps the target free of .pyc files. The environment must be Env's.
func Argv(python string, userSite bool, code string, args ...string) []string {
	argv := []string{python}
	if !userSite {
		argv = append(argv, "-s")
	}
	argv = append(argv, "-u", "-B", "-c", Prologue+"\n"+code)
	return append(argv, args...)
}

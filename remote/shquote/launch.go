package shquote

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/remote/pystart"
)

// Launch is the command line that starts a command through exec hops, and
// the command line that stops it again. Stopping differs by hop, because
// the real programs differ in what killing them does to the command:
//
//   - pct exec and lxc-attach leave the command in the process group of
//     the login shell on the host, so killing that group kills it.
//   - srun turns SIGTERM into a cancel of its step; killed with SIGKILL it
//     leaves the step running, holding the node, with nobody to end it.
//   - docker, podman and nerdctl exec, kubectl and oc exec, lxc and incus
//     exec only ask a daemon to start the command: killing the client
//     leaves it running in the container, stdin open. It is found by a
//     token in its environment and killed from inside, through the hop.
type Launch struct {
	// Line is the command line for the login shell.
	Line string

	hops   []Hop
	python string // the interpreter that runs the in-hop kill; "" for none
	token  string // TokenVar's value in the command's environment
	slurm  bool
}

// TokenVar names the environment variable that marks a command started
// through a hop whose client cannot kill it, so that the command and
// everything it started can be found inside the container.
const TokenVar = "TORCHLSP_HOP_TOKEN"

// NewLaunch prepares argv with env to run through hops (see CommandLine),
// completing the hops' options with what torchlsp needs of them (see
// PrepareExec).
func NewLaunch(hops []Hop, env map[string]string, argv []string) (Launch, error) {
	prepared := make([]Hop, len(hops))
	for i, h := range hops {
		prepared[i] = Hop{Argv: PrepareExec(h.Argv), Shell: h.Shell}
	}
	l := Launch{hops: prepared}
	for _, h := range prepared {
		switch hopKind(h) {
		case hopSlurm:
			l.slurm = true
		case hopClient:
			if len(argv) > 0 && strings.HasPrefix(path.Base(argv[0]), "python") {
				l.python = argv[0]
			}
		}
	}
	if l.python != "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Launch{}, fmt.Errorf("kill token: %w", err)
		}
		l.token = hex.EncodeToString(b[:])
		withToken := make(map[string]string, len(env)+1)
		for k, v := range env {
			withToken[k] = v
		}
		withToken[TokenVar] = l.token
		env = withToken
	}
	line, err := CommandLine(prepared, env, argv)
	if err != nil {
		return Launch{}, err
	}
	l.Line = line
	return l, nil
}

// PrepareExec returns an exec prefix with the options torchlsp's commands
// need added. srun gets --unbuffered: without it slurmstepd holds a task's
// output until a newline, and the helper's framed replies have none, so no
// answer would ever come back.
func PrepareExec(prefix []string) []string {
	if len(prefix) == 0 || path.Base(prefix[0]) != "srun" {
		return prefix
	}
	for _, a := range prefix[1:] {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		if a == "-u" || a == "--unbuffered" {
			return prefix
		}
	}
	return append([]string{prefix[0], "--unbuffered"}, prefix[1:]...)
}

// hopClass is how killing a hop's program affects the command it runs.
type hopClass int

const (
	hopOther  hopClass = iota
	hopSlurm           // srun
	hopClient          // asks a daemon to run the command
)

func hopKind(h Hop) hopClass {
	if len(h.Argv) == 0 {
		return hopOther
	}
	switch path.Base(h.Argv[0]) {
	case "srun":
		return hopSlurm
	case "docker", "podman", "nerdctl", "kubectl", "oc", "lxc", "incus":
		return hopClient
	}
	return hopOther
}

// inHopKill is a Python program that kills, SIGKILL, every process whose
// environment holds TokenVar=argv[1], with its process group when that is
// its own (a process group outside the container's pid namespace reads as
// 0). The processes a command started inherit its environment, so they go
// too.
const inHopKill = `import os,signal,sys
m=("` + TokenVar + `="+sys.argv[1]).encode()
me=os.getpid()
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p)==me:
        continue
    try:
        with open("/proc/"+p+"/environ","rb") as f:
            if m not in f.read().split(b"\0"):
                continue
        g=os.getpgid(int(p))
        if g>1 and g!=os.getpgrp():
            os.killpg(g,signal.SIGKILL)
        os.kill(int(p),signal.SIGKILL)
    except OSError:
        pass
`

// inHopKillArgv runs inHopKill for token, started as torchlsp starts every
// interpreter: the directory the hop starts it in (a container's working
// directory, often a checkout) is not on its sys.path.
func inHopKillArgv(python, token string) []string {
	words := []string{"env"}
	for k, v := range pystart.Env(nil) {
		words = append(words, k+"="+v)
	}
	return append(words, pystart.Argv(python, false, inHopKill, token)...)
}

// KillLine returns the command line that ends the command whose login
// shell had pid pgid (sshd made it a process group leader) and whatever it
// started, run by the login shell of another session on the same host. It
// never fails: a group or container already gone is not an error.
func (l Launch) KillLine(pgid int) string {
	g := "-" + strconv.Itoa(pgid)
	var b strings.Builder
	if l.python != "" {
		// Through the same hops, with nothing on stdin.
		words := inHopKillArgv(l.python, l.token)
		for i := len(l.hops) - 1; i >= 0; i-- {
			h := l.hops[i]
			if h.Shell {
				words = append(slices.Clip(h.Argv), Join(words))
				continue
			}
			words = append(slices.Clip(h.Argv), words...)
		}
		b.WriteString(Join(words) + " </dev/null >/dev/null 2>&1; ")
	}
	if l.slurm {
		// SIGTERM makes srun cancel the step; SIGKILL follows if the group
		// is still there 3 s later.
		b.WriteString("kill -s TERM -- " + g + " 2>/dev/null && { n=0; while kill -s 0 -- " + g +
			" 2>/dev/null && [ $n -lt 30 ]; do sleep 0.1; n=$((n+1)); done; kill -s KILL -- " + g + " 2>/dev/null; }; true")
		return b.String()
	}
	b.WriteString("kill -s KILL -- " + g + " 2>&1 || true")
	return b.String()
}

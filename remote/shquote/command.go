package shquote

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Hop is an argv prefix run on the target host on the way to the command,
// such as `pct exec 200 --`, `docker exec -i NAME` or `su - user -c`.
type Hop struct {
	// Argv is the prefix, e.g. ["pct", "exec", "200", "--"].
	Argv []string
	// Shell reports that the hop hands its last argument to a shell as a
	// command string (`sh -c`, `su - user -c`). The rest of the command
	// line is then quoted for that shell and passed as one more argument,
	// which the outer layer quotes again. Hops without Shell (pct, docker,
	// kubectl exec) pass argv on without a shell, so it is quoted once.
	Shell bool
}

// HopFromExec returns the hop for a configured exec prefix. A prefix that
// ends in "-c" (sh -c, bash -c, su - user -c) hands a command string to a
// shell and is marked Shell; so does one whose last program is a shell
// given a cluster of short options that holds c, as login shells are
// usually asked: bash -lc, zsh -ic, docker exec -i NAME bash -lc.
func HopFromExec(prefix []string) Hop {
	if len(prefix) == 0 {
		return Hop{Argv: prefix}
	}
	if prefix[len(prefix)-1] == "-c" {
		return Hop{Argv: prefix, Shell: true}
	}
	if i := lastShell(prefix); i >= 0 && i < len(prefix)-1 {
		return Hop{Argv: prefix, Shell: takesCommand(prefix[i+1:])}
	}
	return Hop{Argv: prefix}
}

// shells are the programs that run a command string given with -c.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "yash": true}

// shortCluster matches a cluster of short options, such as -lc.
var shortCluster = regexp.MustCompile(`^-[A-Za-z]+$`)

// lastShell is the index of the last word of prefix that names a shell
// and is followed only by options, or -1.
func lastShell(prefix []string) int {
	for i := len(prefix) - 1; i >= 0; i-- {
		w := prefix[i]
		if shells[path.Base(w)] {
			return i
		}
		if !strings.HasPrefix(w, "-") {
			return -1
		}
	}
	return -1
}

// takesCommand reports whether a shell's options end with one that makes
// it read its next argument as the command string.
func takesCommand(opts []string) bool {
	last := opts[len(opts)-1]
	return last == "-c" || shortCluster.MatchString(last) && strings.HasSuffix(last, "c")
}

// checkShellHop refuses a prefix that ends in a shell which would not
// take torchlsp's command as its command string: bash alone would read
// the helper program from stdin as shell commands, and bash -l would run
// a file named python3. A shell given its own command (sh -c 'exec "$@"'
// sh) is left alone: the words that follow reach it as arguments.
func checkShellHop(prefix []string) error {
	for j := 0; j+2 < len(prefix); j++ {
		if shells[path.Base(prefix[j])] && takesCommand(prefix[j+1:j+2]) && !strings.HasPrefix(prefix[j+2], "-") {
			return nil // the shell has its own command string
		}
	}
	i := lastShell(prefix)
	if i < 0 {
		return nil
	}
	sh, opts := path.Base(prefix[i]), prefix[i+1:]
	if len(opts) == 0 {
		return fmt.Errorf("%s alone would read torchlsp's program from stdin as shell commands: end the prefix with -c, as in [%q, %q]", sh, prefix[i], "-lc")
	}
	if !takesCommand(opts) {
		return fmt.Errorf("%s %s does not take a command string (the last option must be -c, or a cluster ending in c such as -lc): use [%q, %q]",
			sh, strings.Join(opts, " "), prefix[i], "-lc")
	}
	return nil
}

// CheckHopShell is checkShellHop for callers outside the package (a local
// target runs hops without an SSH command line).
func CheckHopShell(prefix []string) error { return checkShellHop(prefix) }

// CommandLine returns the command string for an SSH server, whose login
// shell parses it once: it runs argv with env on the target host through
// hops, in order. env is applied innermost, with `env K=V ...`, because
// exec hops do not forward the caller's environment; SSH's own Setenv is
// refused by most servers. Everything is validated first (see ValidateHop
// and ValidateArgv); env values may be secrets and never appear in errors.
func CommandLine(hops []Hop, env map[string]string, argv []string) (string, error) {
	if err := ValidateArgv(argv); err != nil {
		return "", err
	}
	keys := make([]string, 0, len(env))
	for k, v := range env {
		if !envKey.MatchString(k) {
			return "", fmt.Errorf("environment variable name %q: must match %s", k, envKey)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return "", fmt.Errorf("environment variable %s: value contains a NUL byte", k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, h := range hops {
		if err := ValidateHop(h); err != nil {
			return "", fmt.Errorf("exec hop %d: %w", i+1, err)
		}
	}

	words := make([]string, 0, 1+len(keys)+len(argv))
	if len(keys) > 0 {
		words = append(words, "env")
		for _, k := range keys {
			words = append(words, k+"="+env[k])
		}
	}
	words = append(words, argv...)
	for i := len(hops) - 1; i >= 0; i-- {
		h := hops[i]
		if h.Shell {
			words = append(slices.Clip(h.Argv), Join(words))
			continue
		}
		words = append(slices.Clip(h.Argv), words...)
	}
	return Join(words), nil
}

var (
	envKey     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	digits     = regexp.MustCompile(`^[0-9]{1,10}$`)
	dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	dockerUser = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.:-]*$`)
	lxcName    = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9-]*$`)
	// DNS-1123 label (container names, namespaces) and subdomain (pod names).
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
	kubeResource = regexp.MustCompile(`^[a-z]+(\.[a-z0-9.]+)?$`)
)

// ValidateArgv checks the command run at the end of the hops: argv[0] must
// be a program, not an option (leading '-') nor an assignment ('=', which
// `env` would consume), and no element may hold a NUL byte, which argv
// cannot carry.
func ValidateArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("empty command")
	}
	if strings.HasPrefix(argv[0], "-") {
		return fmt.Errorf("command %q starts with '-' and would be read as an option", argv[0])
	}
	if strings.Contains(argv[0], "=") {
		return fmt.Errorf("command %q contains '=' and would be read as an assignment", argv[0])
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %q contains a NUL byte", a)
		}
	}
	return nil
}

// ValidateHop checks an exec prefix. For hop programs whose syntax is known
// (pct, docker, podman, nerdctl, kubectl, lxc, incus) the container or pod
// names are checked against strict patterns and options against a short
// list; for other programs (srun, su, sh) only argv[0] and NUL bytes are
// checked. The quoting of CommandLine keeps every word inert either way.
func ValidateHop(h Hop) error {
	if len(h.Argv) == 0 {
		return fmt.Errorf("empty exec prefix")
	}
	for _, a := range h.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("exec prefix argument %q contains a NUL byte", a)
		}
	}
	prog := h.Argv[0]
	if prog == "" || strings.HasPrefix(prog, "-") || strings.Contains(prog, "=") {
		return fmt.Errorf("exec program %q is not a program name", prog)
	}
	if err := checkShellHop(h.Argv); err != nil {
		return err
	}
	args := h.Argv[1:]
	var tail []string
	var err error
	switch path.Base(prog) {
	case "pct":
		tail, err = checkPct(args)
	case "docker", "podman", "nerdctl":
		tail, err = checkDocker(args)
	case "kubectl", "oc":
		tail, err = checkKubectl(args)
	case "lxc", "incus":
		tail, err = checkLxc(args)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path.Base(prog), err)
	}
	// What follows the recognised prefix is the start of the command the
	// hop runs; a leading '-' there would be read as an option.
	if len(tail) > 0 && strings.HasPrefix(tail[0], "-") {
		return fmt.Errorf("%s: command %q starts with '-' and would be read as an option", path.Base(prog), tail[0])
	}
	return nil
}

// checkPct accepts `pct exec VMID --`.
func checkPct(args []string) ([]string, error) {
	if len(args) < 3 || args[0] != "exec" || args[2] != "--" {
		return nil, fmt.Errorf("want `pct exec VMID --`, got %q", args)
	}
	if !digits.MatchString(args[1]) {
		return nil, fmt.Errorf("VMID %q: must be digits", args[1])
	}
	return args[3:], nil
}

// checkDocker accepts `docker exec [-i] [-u USER] [-w DIR] NAME`.
func checkDocker(args []string) ([]string, error) {
	if len(args) < 2 || args[0] != "exec" {
		return nil, fmt.Errorf("want `exec [options] NAME`, got %q", args)
	}
	args = args[1:]
	for len(args) > 0 {
		a := args[0]
		if !strings.HasPrefix(a, "-") {
			break
		}
		opt, val, hasVal := strings.Cut(a, "=")
		switch opt {
		case "-i", "--interactive", "--privileged":
			if hasVal {
				return nil, fmt.Errorf("option %q takes no value", opt)
			}
			args = args[1:]
		case "-u", "--user", "-w", "--workdir":
			if !hasVal {
				if len(args) < 2 {
					return nil, fmt.Errorf("option %q needs a value", opt)
				}
				val = args[1]
				args = args[1:]
			}
			args = args[1:]
			if opt == "-u" || opt == "--user" {
				if !dockerUser.MatchString(val) {
					return nil, fmt.Errorf("user %q: must match %s", val, dockerUser)
				}
			} else if !strings.HasPrefix(val, "/") {
				return nil, fmt.Errorf("workdir %q: must be an absolute path", val)
			}
		default:
			return nil, fmt.Errorf("option %q is not allowed (allowed: -i, -u, -w, --privileged)", a)
		}
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("container name missing")
	}
	if !dockerName.MatchString(args[0]) {
		return nil, fmt.Errorf("container name %q: must match %s", args[0], dockerName)
	}
	return args[1:], nil
}

// checkKubectl accepts `kubectl exec [-i] [-n NS] POD [-c CONTAINER] --`.
func checkKubectl(args []string) ([]string, error) {
	if len(args) < 2 || args[0] != "exec" {
		return nil, fmt.Errorf("want `exec [-i] [-n NS] POD [-c C] --`, got %q", args)
	}
	args = args[1:]
	pod := ""
	for len(args) > 0 && args[0] != "--" {
		a := args[0]
		if !strings.HasPrefix(a, "-") {
			if pod != "" {
				return nil, fmt.Errorf("second pod %q before `--`", a)
			}
			pod = a
			kind, name, typed := strings.Cut(a, "/")
			if typed && !kubeResource.MatchString(kind) {
				return nil, fmt.Errorf("resource type %q: must match %s", kind, kubeResource)
			}
			if !typed {
				name = a
			}
			if !dnsSubdomain.MatchString(name) {
				return nil, fmt.Errorf("pod %q: must be a DNS-1123 subdomain", name)
			}
			args = args[1:]
			continue
		}
		opt, val, hasVal := strings.Cut(a, "=")
		switch opt {
		case "-i", "--stdin", "-q", "--quiet":
			if hasVal {
				return nil, fmt.Errorf("option %q takes no value", opt)
			}
			args = args[1:]
		case "-n", "--namespace", "-c", "--container":
			if !hasVal {
				if len(args) < 2 {
					return nil, fmt.Errorf("option %q needs a value", opt)
				}
				val = args[1]
				args = args[1:]
			}
			args = args[1:]
			if !dnsLabel.MatchString(val) {
				return nil, fmt.Errorf("%s %q: must be a DNS-1123 label", strings.TrimLeft(opt, "-"), val)
			}
		default:
			return nil, fmt.Errorf("option %q is not allowed (allowed: -i, -q, -n, -c)", a)
		}
	}
	if pod == "" {
		return nil, fmt.Errorf("pod name missing")
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("want `--` after the pod")
	}
	return args[1:], nil
}

// checkLxc accepts `lxc exec NAME --` (and incus).
func checkLxc(args []string) ([]string, error) {
	if len(args) < 3 || args[0] != "exec" || args[2] != "--" {
		return nil, fmt.Errorf("want `exec NAME --`, got %q", args)
	}
	if !lxcName.MatchString(args[1]) {
		return nil, fmt.Errorf("instance name %q: must match %s", args[1], lxcName)
	}
	return args[3:], nil
}

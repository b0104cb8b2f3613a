#!/usr/bin/env bash
# The main job, for real, on two targets, as an editor would ask it:
#   ct200  a real torch 2.6 (Debian 13's python3-torch, Python 3.13, CPU
#          only) in LXC container 200 on this machine, entered the way
#          Proxmox users enter theirs: `pct exec 200 --`
#   deb12  Debian 12's torch 1.13 through this machine's /usr/bin/python3:
#          a torch without torch.compile, answered honestly
# Each step prints the command it runs and the answer under a heading; a
# summary of what ran where closes it. The first run builds the
# container's root file system (about 2 minutes, cached under
# /var/cache/torchlsp-hops) and mirrors both torches (cached under
# ~/.cache/torchlsp); later runs take seconds. Needs root (LXC).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

if [[ $(id -u) -ne 0 ]]; then
	echo "demo: the container needs root (LXC): run sudo $0" >&2
	exit 1
fi

step_started=$(date +%s.%N)
heading() {
	step_started=$(date +%s.%N)
	printf '\n\033[1m== %s\033[0m\n' "$*"
}
show() { # show CMD...: print the command as a user would type it, then run it
	printf '$ %s\n' "$*"
	"$@"
}

summary=()
record() { # record STEP TARGET WHAT: a row of the closing summary, with the step's seconds
	local took
	took=$(awk -v now="$(date +%s.%N)" -v then="$step_started" 'BEGIN { printf "%5.1f", now - then }')
	summary+=("$(printf '%-18s %-7s %s s  %s' "$1" "$2" "$took" "$3")")
}

heading "Set-up (packages, the binary, the container's root file system)"
scripts/setup.sh --demo

# The container, fresh every run (its changes live in an overlay), and
# its pct front end first on PATH, as on a Proxmox node.
prefix=tlhdemo
work=$(mktemp -d)
cleanup() {
	scripts/hops/lxc.sh down "$prefix" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
scripts/hops/lxc.sh down "$prefix" >/dev/null 2>&1 || true
pct_bin=$(scripts/hops/lxc.sh up "$prefix" trixie | sed -n 's/^PCT_BIN=//p')
export PATH="$pct_bin:$PATH"
record "set-up, container" this "packages, bin/torchlsp, LXC container 200 started"

# The two targets, as a user's ~/.config/torchlsp/config.toml holds them
# (a directory of the demo's own: the user's configuration is left alone).
config_home=$work/config
mkdir -p "$config_home/torchlsp"
cat >"$config_home/torchlsp/config.toml" <<'TOML'
default = "ct200"

[targets.ct200]
exec = ["pct", "exec", "200", "--"]
python = "/usr/bin/python3"

[targets.deb12]
python = "/usr/bin/python3"
TOML
export XDG_CONFIG_HOME=$config_home
echo "targets: ct200 (pct exec 200 -- /usr/bin/python3), deb12 (/usr/bin/python3); config: $config_home/torchlsp/config.toml"

torchlsp() { bin/torchlsp "$@"; }
file=examples/threaded_compile.py
at() { # at FILE NEEDLE [OFFSET]: FILE:LINE:COL of the first NEEDLE, OFFSET characters in
	local f=$1 needle=$2 off=${3:-0} line col
	line=$(grep -n -F -m1 -- "$needle" "$f" | cut -d: -f1)
	col=$(awk -v n="$line" -v s="$needle" 'NR==n { print index($0, s) }' "$f")
	echo "$f:$line:$((col + off))"
}
line_of() { grep -n -F -m1 -- "$2" "$1" | cut -d: -f1; }

heading "1. doctor: the way to the target, step by step (ct200: through pct exec 200)"
show torchlsp doctor --target ct200
record "doctor" ct200 "interpreter, helper, torch found through pct exec"

heading "2. hover and definition into torch 2.6's own source"
show torchlsp hover "$(at $file 'torch.compile(model' 6)"
show torchlsp definition "$(at $file 'torch.compile(model' 6)"
show torchlsp definition "$(at $file 'nn.Linear(' 3)"
show torchlsp hover "$(at $file 'checkpoint(self' 0)"
show torchlsp definition "$(at $file 'checkpoint(self' 0)"
show torchlsp hover "$(at $file 'cudagraph_trees = True' 0)"
show torchlsp definition "$(at $file 'cudagraph_trees = True' 0)"
record "hover, definition" ct200 "torch.compile, nn.Linear, checkpoint, triton.cudagraph_trees"

heading "3. check: the hazard, decided by torch 2.6's own lines"
show torchlsp check "$file" || true # exit 1: it found what it should
record "check" ct200 "TL001 citing 2.6's cudagraph_trees.py get_obj assert"

heading "4. gates: every place torch 2.6 reads triton.cudagraph_trees"
show torchlsp gates triton.cudagraph_trees
record "gates" ct200 "the flag's definition and the places torch reads it"

heading "5. traceback: the seed's AssertionError, raised for real in the container, linked into the mirror"
tb=$work/traceback.txt
cat <<'PY'
$ pct exec 200 -- python3 -c '…a thread asks CUDA graph trees for their state…' 2>&1 | torchlsp traceback -
PY
pct exec 200 -- python3 -c '
import threading
from torch._inductor import cudagraph_trees
worker = threading.Thread(target=cudagraph_trees.get_container, args=(0,))
worker.start()
worker.join()
' >"$tb" 2>&1 || true
torchlsp traceback - <"$tb"
record "traceback" ct200 "get_obj's AssertionError at its mirrored line"

heading "6. explain: graph breaks of a compiled model, compiled for real by Inductor on the container's CPU"
show torchlsp explain "examples/cpu_compile.py:$(line_of examples/cpu_compile.py 'torch.compile(model)')"
record "explain" ct200 "a graph break on its line, from torch's own logs"

heading "7. repro: the threaded compile on a target with no GPU"
show torchlsp repro "$file:$(line_of $file 'torch.compile(model')" || true # exit 1: nothing could run here
record "repro" ct200 "one sentence: no GPU here, so nothing to run"

heading "8. site: torch 2.6's packages for pyright, although this machine's own torch is 1.13"
site=$(torchlsp site --quiet)
echo "\$ torchlsp site --quiet"
echo "$site"
pyright_dir=${TORCHLSP_PYRIGHT_DIR:-/var/cache/torchlsp-pyright}
if [[ -x "$pyright_dir/node_modules/.bin/pyright" ]]; then
	probe=$work/probe
	mkdir -p "$probe"
	printf '{"extraPaths": ["%s"], "pythonVersion": "3.13"}\n' "$site" >"$probe/pyrightconfig.json"
	cat >"$probe/probe.py" <<-'PY'
		import torch
		from torch._inductor import config

		reveal_type(torch.compile)
		reveal_type(config.triton.cudagraph_trees)
	PY
	echo "\$ pyright probe.py    # pyrightconfig.json: {\"extraPaths\": [\"$site\"]}"
	(cd "$probe" && "$pyright_dir/node_modules/.bin/pyright" probe.py | grep -E 'Type of|error|warning' | sed "s#$probe/##") || true
	record "site" ct200 "pyright types torch 2.6's torch.compile from the site"
else
	echo "(pyright is not installed here: point its extraPaths at the directory above)"
	record "site" ct200 "a site-packages for pyright"
fi

heading "9. the same questions of Debian 12's torch 1.13, which has no torch.compile"
show torchlsp hover --target deb12 "$(at $file 'torch.compile(model' 6)" || true
show torchlsp check --target deb12 "$file" || true
record "hover, check" deb12 "said once: no torch.compile in 1.13; nothing invented"

heading "Summary: what ran where"
printf '%-18s %-7s %7s  %s\n' "step" "target" "time" "what it showed"
printf '%s\n' "${summary[@]}"
echo
echo "ct200: torch $(pct exec 200 -- python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) in LXC container 200 (pct exec 200 --); deb12: torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) on this machine"
echo "demo: done in $((SECONDS - started)) s"

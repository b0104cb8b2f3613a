# Shared by the scripts in scripts/hops: where the cache and the run
# directories live, logging, locks. Sourced, not run.
#
# Everything here runs as root: network namespaces, LXC, dockerd and the
# Slurm daemons need it.

HOPS_CACHE=${TORCHLSP_HOPS_CACHE:-/var/cache/torchlsp-hops}
# Per-run state (pid files, sockets, container deltas) lives under here,
# one directory per run prefix; paths stay short because sockets must.
HOPS_RUN=${TORCHLSP_HOPS_RUN:-/run/torchlsp-hops}
DEBIAN_MIRROR=${TORCHLSP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
HOPS_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HOPS_REPO=$(cd "$HOPS_SCRIPTS/../.." && pwd)

hops_log() { echo "hops: $*" >&2; }
hops_die() {
	hops_log "$*"
	exit 1
}

hops_need_root() {
	[[ $(id -u) -eq 0 ]] || hops_die "must run as root (network namespaces, LXC, dockerd, Slurm)"
}

# hops_check_prefix PREFIX: run prefixes are "tlh" plus lowercase letters
# and digits, short enough for interface names (15 bytes with a suffix).
hops_check_prefix() {
	[[ "$1" =~ ^tlh[a-z0-9]{1,8}$ ]] || hops_die "bad run prefix '$1': want tlh followed by 1-8 of [a-z0-9]"
}

# hops_key FILE...: a short content hash of files and of the words given
# after "--", the cache key of what is built from them.
hops_key() {
	local files=() words=()
	while (($#)); do
		if [[ "$1" == -- ]]; then
			shift
			words=("$@")
			break
		fi
		files+=("$1")
		shift
	done
	{
		((${#files[@]})) && cat "${files[@]}"
		printf '%s\n' "${words[@]}"
	} | sha256sum | cut -c1-16
}

# hops_locked LOCKNAME CMD...: runs CMD holding an exclusive lock, so that
# two runs never build the same cache entry at once.
hops_locked() {
	local name=$1
	shift
	mkdir -p "$HOPS_CACHE"
	(
		flock -w 1800 9 || hops_die "timed out waiting for $HOPS_CACHE/.lock-$name"
		"$@"
	) 9>"$HOPS_CACHE/.lock-$name"
}

# hops_kill_pidfile FILE [GRACE_S]: TERM the process a pid file names,
# KILL it after GRACE_S seconds (default 10), and wait for it to go.
hops_kill_pidfile() {
	local f=$1 grace=${2:-10} pid i
	[[ -s "$f" ]] || return 0
	pid=$(<"$f")
	[[ "$pid" =~ ^[0-9]+$ ]] && ((pid > 1)) || return 0
	kill -TERM "$pid" 2>/dev/null || {
		rm -f "$f"
		return 0
	}
	for ((i = 0; i < grace * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$f"
}

# hops_in_ns NS CMD...: runs CMD in network namespace NS. nsenter, not
# `ip netns exec`: that one also mounts a fresh /sys, which hides the
# cgroup file systems slurmd, dockerd and LXC need.
hops_in_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" -- "$@"
}

# hops_kill_naming TEXT: SIGKILL every process whose command line
# contains TEXT (a run directory: specific to one run), by pid.
hops_kill_naming() {
	local text=$1 f pid
	# The pattern comes from a file, so that grep's own command line does
	# not match it.
	for f in $(grep -lzF -f <(printf '%s\n' "$text") /proc/[0-9]*/cmdline 2>/dev/null); do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		((pid == $$ || pid == BASHPID)) && continue
		kill -KILL "$pid" 2>/dev/null || true
	done
}

#!/usr/bin/env bash
# Runs the README's two commands as a fresh machine would: in a clean clone
# of a commit (HEAD by default), with every cache the scripts and their
# tools use pointed at empty directories, and prints each command's wall
# time. Run it before submitting a change to set-up, editors or tests.
#
#   scripts/fresh-check.sh [--keep] [--skip-demo] [REF]
#
# The caches that start empty:
#   TORCHLSP_PYRIGHT_DIR, PYRIGHT_DIR   pyright and basedpyright from npm   (default /var/cache/torchlsp-pyright)
#   TORCHLSP_HOPS_CACHE                 the hop tests' root file systems   (default /var/cache/torchlsp-hops)
#   TORCHLSP_EDITORS_CACHE              code-server and its node modules   (default /var/cache/torchlsp-editors)
#   GOCACHE, GOMODCACHE, GOPATH         Go's build and module caches
#   npm_config_cache                    npm's download cache
#   HOME (XDG_* unset, as on CI)       torchlsp's own cache, config and state, ~/.local
# They live under one temporary directory, removed at the end unless --keep
# is given; the machine's own caches are neither read nor changed, so this
# can run beside other work. What it cannot undo is a Debian package the
# machine already has: setup.sh's apt step then has less to do than on a
# really new machine.
#
# Exit status: 0 when both commands pass. The logs stay in the temporary
# directory when either fails.
set -uo pipefail

keep=0
demo=1
ref=HEAD
while (($#)); do
	case "$1" in
	--keep) keep=1 ;;
	--skip-demo) demo=0 ;;
	-h | --help)
		sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "fresh-check: unknown option $1" >&2
		exit 2
		;;
	*) ref=$1 ;;
	esac
	shift
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}") || exit 2
if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" && "$ref" == HEAD ]]; then
	echo "fresh-check: uncommitted changes are not part of the check (it clones $commit)" >&2
fi

top=$(mktemp -d /var/tmp/torchlsp-fresh.XXXXXX)
cleanup() {
	local status=$?
	if ((keep)) || ((status != 0)); then
		echo "fresh-check: kept $top" >&2
		return
	fi
	# Go's module cache is read-only by design.
	chmod -R u+w "$top" 2>/dev/null
	rm -rf "$top"
}
trap cleanup EXIT

mkdir -p "$top"/{home,cache/go-build,cache/gomod,cache/npm,gopath}
# Tools installed per user (pyenv's shims on PATH) still find their root.
[[ -d "$HOME/.pyenv" ]] && export PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}"
# A machine like CI's has no XDG_* set: torchlsp's cache, config and state
# then live under the new home, and editors show their paths with "~".
export HOME="$top/home"
unset XDG_CACHE_HOME XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME
export GOCACHE="$top/cache/go-build" GOMODCACHE="$top/cache/gomod" GOPATH="$top/gopath" GOFLAGS="-modcacherw"
export npm_config_cache="$top/cache/npm"
export TORCHLSP_PYRIGHT_DIR="$top/cache/pyright" PYRIGHT_DIR="$top/cache/pyright"
export TORCHLSP_HOPS_CACHE="$top/cache/hops"
export TORCHLSP_EDITORS_CACHE="$top/cache/editors"
unset CODE_SERVER TORCHLSP_BIN TORCHLSP_TORCH211_SITE
export CI=true

git clone --quiet --no-local "$repo" "$top/src" && git -C "$top/src" checkout --quiet --detach "$commit" || exit 2
cd "$top/src" || exit 2
echo "fresh-check: $commit in $top/src ($(nproc) cores)" >&2

# timed NAME LOG COMMAND...: runs the command, its output into LOG, and
# prints the wall time.
results=()
failed=0
timed() {
	local name=$1 log=$2
	shift 2
	local start=$SECONDS
	echo "fresh-check: $name (log: $log)" >&2
	"$@" >"$log" 2>&1
	local rc=$? took=$((SECONDS - start))
	results+=("$(printf '%-22s rc=%d  %dm%02ds' "$name" "$rc" $((took / 60)) $((took % 60)))")
	if ((rc != 0)); then
		failed=1
		tail -n 40 "$log" >&2
	fi
}

((demo)) && timed "scripts/demo.sh" "$top/demo.log" scripts/demo.sh
timed "bash .ci/run" "$top/ci.log" bash .ci/run

printf '%s\n' "fresh-check: $commit" "${results[@]}"
grep -h '^editors: [0-9]* passed' "$top/ci.log" 2>/dev/null
exit "$failed"

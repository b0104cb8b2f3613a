#!/usr/bin/env bash
# The cold server's peak RSS, first answers and query times on the GPU
# host's torch for bin/torchlsp-old and bin/torchlsp-new, each under the
# glibc arena limits CONFIGS names (BUILD:ARENAS, "default" for the
# build's own), then --refs-first for the builds REFS_FIRST names.
# Carry bin/ (scripts/device/cold_rss.sh build BASE_REF makes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python3}
for cfg in ${CONFIGS:-old:default new:default new:1 new:4 new:128}; do
	build=${cfg%%:*} arena=${cfg#*:}
	envs=()
	[[ $arena == default ]] || envs=(MALLOC_ARENA_MAX="$arena")
	echo "== $build arena=$arena"
	cp "bin/torchlsp-$build" bin/torchlsp
	env "${envs[@]}" scripts/bench.sh --no-build --rounds 5 --xref-rounds 5 --python "$PYTHON" --settle 1m --servers torchlsp 2>&1 |
		grep -E '^\| torchlsp|first references|VmHWM' || true
	echo
done
for build in ${REFS_FIRST:-new}; do
	echo "== $build --refs-first"
	cp "bin/torchlsp-$build" bin/torchlsp
	scripts/bench.sh --no-build --rounds 1 --xref-rounds 1 --refs-first --python "$PYTHON" --settle 1m --servers torchlsp 2>&1 |
		grep -E '^\| torchlsp|first references' || true
done

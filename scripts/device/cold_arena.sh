#!/usr/bin/env bash
# The cold server's peak RSS on the GPU host's torch for bin/torchlsp-old
# and bin/torchlsp-new under several glibc arena limits, and the index
# build's time under each (lspbench growth). Carry bin/ (cold_rss.sh build).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python3}
site=$(mktemp -d)
ln -s "$("$PYTHON" -c 'import torch,os;print(os.path.dirname(torch.__file__))')" "$site/torch"
for cfg in ${CONFIGS:-old:default new:default new:1 new:4 new:128}; do
	build=${cfg%%:*} arena=${cfg#*:}
	envs=()
	[[ $arena == default ]] || envs=(MALLOC_ARENA_MAX="$arena")
	echo "== $build arena=$arena"
	cp "bin/torchlsp-$build" bin/torchlsp
	env "${envs[@]}" scripts/bench.sh --no-build --rounds 5 --xref-rounds 5 --python "$PYTHON" --settle 1m --servers torchlsp 2>&1 |
		grep -E '^\| torchlsp|first references|VmHWM' || true
	env "${envs[@]}" bin/lspbench growth -child index -site "$site" || true
	echo
done
for build in ${REFS_FIRST:-new}; do
	echo "== $build --refs-first"
	cp "bin/torchlsp-$build" bin/torchlsp
	scripts/bench.sh --no-build --rounds 1 --xref-rounds 1 --refs-first --python "$PYTHON" --settle 1m --servers torchlsp 2>&1 |
		grep -E '^\| torchlsp|first references' || true
done

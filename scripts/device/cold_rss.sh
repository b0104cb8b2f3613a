#!/usr/bin/env bash
# The cold server's peak RSS, first answers and hover/definition latency on
# the GPU host's own torch, two builds alternately on the same host:
# scripts/bench.sh with the host's interpreter, torchlsp only; then the
# same with --refs-first (references asked right after initialize).
#
# Here (with Go):   scripts/device/cold_rss.sh build BASE_REF
#                   (bin/torchlsp-old from BASE_REF; bin/torchlsp-new and
#                   bin/lspbench from the working tree)
# There:            scripts/device/cold_rss.sh        # carry bin/
#
# Environment: PYTHON (default the host's), ROUNDS (default 2: runs of
# each build).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/device/lib.sh
. scripts/device/lib.sh

if [[ "${1:-}" == build ]]; then
	base_worktree "${2:?base ref}"
	mkdir -p bin
	(cd "$wt" && CGO_ENABLED=1 go build -ldflags="-s -w" -o "$OLDPWD/bin/torchlsp-old" ./cmd/torchlsp)
	CGO_ENABLED=1 go build -ldflags="-s -w" -o bin/torchlsp-new ./cmd/torchlsp
	go build -ldflags="-s -w" -o bin/lspbench ./cmd/lspbench
	ls -l bin/torchlsp-old bin/torchlsp-new bin/lspbench
	exit 0
fi

PYTHON=${PYTHON:-/opt/torch/.venv/bin/python3}
ROUNDS=${ROUNDS:-2}
for _ in $(seq "$ROUNDS"); do
	for build in old new; do
		echo "== $build"
		cp "bin/torchlsp-$build" bin/torchlsp
		scripts/bench.sh --no-build --rounds 5 --xref-rounds 5 --python "$PYTHON" --settle 1m --servers torchlsp 2>&1 |
			grep -E '^\| torchlsp|first references|first workspace symbol|VmHWM' || true
		echo "== $build --refs-first"
		scripts/bench.sh --no-build --rounds 1 --xref-rounds 1 --refs-first --python "$PYTHON" --settle 1m --servers torchlsp 2>&1 |
			grep -E '^\| torchlsp|first references' || true
	done
done

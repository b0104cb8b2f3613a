#!/usr/bin/env bash
# The first references and workspace-symbol queries of a cold start on the
# GPU host's own torch: pyindex's BenchmarkColdReferences and
# BenchmarkColdSymbols (a new index, no cache, no Build) of two builds,
# run alternately so that both see the same host.
#
# Here (with Go):   scripts/device/cold_refs.sh build BASE_REF
#                   (bin/pyindex-old.test from BASE_REF, bin/pyindex-new.test
#                   from the working tree)
# There:            scripts/device/cold_refs.sh        # carry bin/
#
# Environment: SITE (default the host's site-packages); ROUNDS (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/device/lib.sh
. scripts/device/lib.sh

if [[ "${1:-}" == build ]]; then
	base_worktree "${2:?base ref}"
	cp server/pyindex/xref_bench_test.go "$wt/server/pyindex/"
	mkdir -p bin
	(cd "$wt" && go test -c -ldflags="-s -w" -o "$OLDPWD/bin/pyindex-old.test" ./server/pyindex)
	go test -c -ldflags="-s -w" -o bin/pyindex-new.test ./server/pyindex
	ls -l bin/pyindex-*.test
	exit 0
fi

SITE=${SITE:-/opt/torch/.venv/lib/python3.12/site-packages}
ROUNDS=${ROUNDS:-3}
for _ in $(seq "$ROUNDS"); do
	for build in old new; do
		echo "== $build"
		(cd server/pyindex && TORCHLSP_TORCH211_SITE=$SITE "../../bin/pyindex-$build.test" \
			-test.run XXX -test.bench 'ColdReferences|ColdSymbols' -test.benchtime 3x -test.benchmem) | grep '^Benchmark'
	done
done

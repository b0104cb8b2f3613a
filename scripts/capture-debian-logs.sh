#!/usr/bin/env bash
# Captures real output of Debian's torch 1.13 (python3-torch) for the
# traceback and log parsers' tests: tracebacks from threads, DataLoader
# workers, fx's eval_with_key code, autograd's anomaly mode, TorchScript,
# unittest, `python -m` (<frozen runpy>) and `python -c` (<string>) frames,
# faulthandler dumps, torch's warnings and C++ stack traces. torch 1.13 has
# no TORCH_LOGS (no torch._logging, no Dynamo): those come from the GPU
# host's torch 2.11 (scripts/device/capture_logs.sh).
#
# Run:    scripts/capture-debian-logs.sh [OUTDIR]
# Writes: OUTDIR/NAME.txt (stdout and stderr together, then "exit N"), and
#         OUTDIR/version.txt; OUTDIR defaults to
#         server/traceback/testdata/torch113.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${1:-$repo/server/traceback/testdata/torch113}
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$repo"/scripts/logs/*.py "$work/"
run() { # NAME ENV... -- ARGS...
	local name=$1; shift
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
	echo "== $name"
	(cd "$work" && env "${envs[@]}" PYTHONUNBUFFERED=1 timeout 120 "$PYTHON" "$@" >"$OUT/$name.txt" 2>&1; echo "exit $?" >>"$OUT/$name.txt")
	tail -n 2 "$OUT/$name.txt"
}
run threads X=1 -- threads.py
run eval_with_key X=1 -- eval_with_key.py
run anomaly X=1 -- anomaly.py
run dataloader X=1 -- dataloader.py
run faulthandler X=1 -- faulthandler_dump.py
run jit_script X=1 -- jit_script.py
run warnings X=1 -- -W always warnings_torch.py
run unittest X=1 -- unittest_torch.py
run runpy X=1 -- -m runpy_main
run cpp_stack TORCH_SHOW_CPP_STACKTRACES=1 -- cpp_stack.py
run string X=1 -- -c 'import torch; torch.nn.Linear(2, 2)(torch.ones(3))'
(cd "$work" && "$PYTHON" -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0], torch.__file__)') >"$OUT/version.txt" 2>&1
echo "work dir was $work"

#!/usr/bin/env bash
# Captures, on the GPU host, the torch source tree and real output of torch
# 2.11 for the traceback and log parsers: tracebacks from compiled code in
# threads, TORCH_LOGS graph breaks, recompiles and guard failures, fx's
# eval_with_key frames, faulthandler dumps, CUDA-graph overwrite errors.
#
# There:  OUT=dir scripts/device/capture_logs.sh
# Writes: $OUT/torch-src.tar.gz (the .py/.pyi files of the torch package)
#         $OUT/logs.tar.gz (one file per capture, stdout and stderr together)
set -uo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || command -v python3)}
OUT=${OUT:?set OUT}
work=$(mktemp -d)
site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "site $site"
(cd "$site" && find torch -name '*.py' -o -name '*.pyi' | tar -czf "$OUT/torch-src.tar.gz" -T -)
ls -l "$OUT/torch-src.tar.gz"
mkdir -p "$work/logs"
run() { # NAME ENV... -- SCRIPT
	local name=$1; shift
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
	echo "== $name"
	(cd "$work" && env "${envs[@]}" PYTHONUNBUFFERED=1 timeout 240 "$PYTHON" "$work/$(basename "$1")" >"$work/logs/$name.txt" 2>&1; echo "exit $?" >>"$work/logs/$name.txt")
	tail -n 3 "$work/logs/$name.txt"
}
cp logs/*.py "$work/"
run threads_assert X=1 -- logs/threads_assert.py
run graph_breaks TORCH_LOGS=graph_breaks,recompiles -- logs/graph_breaks.py
run recompiles_verbose TORCH_LOGS=recompiles_verbose,guards -- logs/graph_breaks.py
run overwritten X=1 -- logs/overwritten.py
run eval_with_key X=1 -- logs/eval_with_key.py
run faulthandler X=1 -- logs/faulthandler_dump.py
run explain X=1 -- logs/explain.py
run fullgraph_break X=1 -- logs/fullgraph_break.py
if "$PYTHON" -c 'import pytest' 2>/dev/null; then
	(cd "$work" && PYTHONUNBUFFERED=1 timeout 240 "$PYTHON" -m pytest -q test_pytest_torch.py >"$work/logs/pytest.txt" 2>&1; echo "exit $?" >>"$work/logs/pytest.txt")
else
	echo "no pytest on the host" >"$work/logs/pytest.txt"
fi
"$PYTHON" -c 'import torch,sys; print(torch.__version__, sys.version)' >"$work/logs/version.txt" 2>&1
tar -C "$work" -czf "$OUT/logs.tar.gz" logs
ls -l "$OUT"

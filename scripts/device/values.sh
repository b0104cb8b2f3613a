#!/usr/bin/env bash
# Compiled callables as values, on the GPU host (torch 2.11): each script
# under scripts/device/values/ makes its compiled code's first calls from a
# worker thread, and says in one line what happened;
# beside it, the codes `torchlsp check` gives it against the host's torch.
# TL001 should fire on the scripts without ".quiet" in their name
# (server/diagnose/testdata/cases/tl001_values.txtar has their shapes),
# and on torch 2.11 their worker threads fail with AssertionError
# (cudagraph_trees.py's get_obj); the quiet ones run and get no TL001.
# Warmed up on the main thread first (three calls there), every one of
# them ran in the worker on torch 2.11 (H100, 2026-12-06), so the scripts
# make their first calls in the worker.
#
# Here (with Go):        go build -o bin/torchlsp ./cmd/torchlsp
# There (no Go needed):  scripts/device/values.sh      # carry bin/
# Environment: PYTHON (default /opt/torch/.venv/bin/python3).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
BIN=$PWD/bin/torchlsp
cd scripts/device/values
for f in *.py; do
	[[ $f == common.py ]] && continue
	(
		codes="(no torchlsp)"
		if [[ -x $BIN ]]; then
			# check exits 1 when it finds something: only its output counts.
			codes=$({ "$BIN" check --quiet --format json --python "$PY" "$f" 2>/dev/null || true; } |
				"$PY" -c 'import json,sys; print(" ".join(sorted({d["code"].split()[0] for d in json.load(sys.stdin)})) or "(none)")' 2>/dev/null || echo "(check failed)")
		fi
		out=$("$PY" "$f" 2>&1 | tail -1)
		printf '%s\t%s\t%s\n' "$f" "$codes" "$out"
	) &
done | sort
wait

#!/usr/bin/env bash
# Probes of the field hazards on the GPU host, one process per variant.
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
cd "$(dirname "$0")"
for s in inplace wrapped; do for n in 2 4; do
  timeout 120 "$PY" tl001_variants.py $s nograd $n 2>&1 | tail -n 1
done; done
echo "== tl001_in_place"; timeout 200 "$PY" ../hazards/tl001_in_place.py 2>&1 | tail -n 1

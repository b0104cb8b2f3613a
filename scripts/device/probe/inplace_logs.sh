#!/usr/bin/env bash
# Does an in-place Module.compile with reduce-overhead use CUDA graphs?
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
cd "$(dirname "$0")"
for s in inplace wrapped; do
  echo "== $s, one thread"
  TORCH_LOGS=perf_hints,cudagraphs timeout 120 "$PY" tl001_variants.py $s nograd 1 2>&1 | grep -iE 'skipping|cudagraph|threads' | cut -c1-220 | sort | uniq -c | head -12
done

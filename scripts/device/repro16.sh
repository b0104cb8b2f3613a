#!/usr/bin/env bash
# The user's own code on the GPU host: the threaded repro of a GPT compiled
# with reduce-overhead and called from two threads (its first real call
# captured), and Explain compile on a step with two deliberate graph
# breaks, through the LSP (fake client) and through the command line.
#
# Here (with Go):        scripts/device/repro16.sh build
# There (no Go needed):  scripts/device/repro16.sh            # carry bin/
#
# Environment: PYTHON (default /opt/torch/.venv/bin/python3); OUT, where
# the reports are written (default ./out-repro16).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ "${1:-}" == build ]]; then
	mkdir -p bin
	CGO_ENABLED=1 go build -o bin/torchlsp ./cmd/torchlsp
	go test -c -o bin/e2e.test ./test/e2e
	ls -l bin/torchlsp bin/e2e.test
	exit 0
fi

PYTHON=${PYTHON:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-$PWD/out-repro16}
mkdir -p "$OUT"
export OUT
BIN=$PWD/bin/torchlsp
[[ -x $BIN && -x bin/e2e.test ]] || { echo "run '$0 build' first and carry bin/" >&2; exit 2; }
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count())' | tee "$OUT/torch.txt"

# 1. Through the LSP: the real binary driven by the fake client.
(cd test/e2e && TORCHLSP_BIN=$BIN TORCHLSP_DEVICE_PYTHON=$PYTHON \
	timeout 540 ../../bin/e2e.test -test.run 'TestOwnCodeOnGPUHost$' -test.v -test.timeout 9m) \
	>"$OUT/lsp.log" 2>&1 && echo "lsp: PASS" || echo "lsp: FAIL (rc $?)"
tail -n 5 "$OUT/lsp.log"

# 2. The same from the command line, on a scratch copy of the fixtures.
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cp test/e2e/testdata/h200/own_gpt.py test/e2e/testdata/h200/own_breaks.py "$ws/"
export XDG_CACHE_HOME=$ws/.cache XDG_CONFIG_HOME=$ws/.config XDG_STATE_HOME=$ws/.state
line=$(grep -n 'torch.compile(step)' "$ws/own_breaks.py" | cut -d: -f1)
{ time "$BIN" explain --python "$PYTHON" "$ws/own_breaks.py:$line"; } >"$OUT/cli-explain.md" 2>"$OUT/cli-explain.err" \
	&& echo "cli explain: rc 0" || echo "cli explain: rc $?"
grep -E '^/.*: (Graph break|Recompile)' "$OUT/cli-explain.md" || true
line=$(grep -n 'torch.compile(model' "$ws/own_gpt.py" | cut -d: -f1)
{ time "$BIN" repro --own --python "$PYTHON" "$ws/own_gpt.py:$line"; } >"$OUT/cli-repro.md" 2>"$OUT/cli-repro.err" \
	&& echo "cli repro --own: rc 0" || echo "cli repro --own: rc $?"
grep -E '^\| (threads|main-thread|cudagraph)' "$OUT/cli-repro.md" | cut -c1-240 || true
echo "reports: $OUT (own-code.md from the LSP run, cli-*.md from the command line)"

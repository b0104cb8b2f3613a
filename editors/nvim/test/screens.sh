#!/usr/bin/env bash
# Takes screenshots of the plugin in a real terminal Neovim: runs it in tmux,
# drives it with send-keys, captures the screen with its colours
# (capture-pane -e) and renders that to PNG (editors/e2e/ansi-to-png.mjs).
# Usage: screens.sh OUTDIR. Environment as for e2e.lua.
set -euo pipefail

out="${1:?usage: screens.sh OUTDIR}"
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
ws="$(realpath "${TORCHLSP_FIXTURE_WS:-$repo/editors/testdata/workspace}")"
timeout_s="${TORCHLSP_READY_TIMEOUT:-120}"
nvim="${NVIM:-nvim}"
mkdir -p "$out"
tmp="$(mktemp -d)"
sock="torchlsp-screens-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

cp -r "$ws" "$tmp/workspace"
cd "$repo"
tmux -L "$sock" -f /dev/null new-session -d -x 150 -y 36 \
  -e TERM=xterm-256color -e COLORTERM=truecolor \
  "$nvim -u editors/nvim/test/screens_init.lua $tmp/workspace/train.py"

# wait_for PATTERN: polls the screen until PATTERN (an extended regex) shows,
# bounded by the ready timeout.
wait_for() {
  local deadline=$((SECONDS + timeout_s))
  while ((SECONDS < deadline)); do
    if tmux -L "$sock" capture-pane -p | grep -Eq "$1"; then
      return 0
    fi
    sleep 0.3
  done
  echo "screens: timed out waiting for /$1/ on screen:" >&2
  tmux -L "$sock" capture-pane -p >&2
  return 1
}

capture() {
  tmux -L "$sock" capture-pane -p -e >"$tmp/$1.ansi"
  node "$repo/editors/e2e/ansi-to-png.mjs" "$tmp/$1.ansi" "$out/$1.png" "Neovim $("$nvim" --version | head -1 | cut -d' ' -f2) + torchlsp"
  echo "screens: wrote $out/$1.png"
}

status=0
wait_for 'train\.py'
tmux -L "$sock" send-keys ":lua torchlsp_screens.hover($timeout_s)" Enter
if wait_for 'torch/__init__\.py'; then capture nvim-hover; else status=1; fi

tmux -L "$sock" send-keys Escape ":lua torchlsp_screens.quickfix($timeout_s)" Enter
if wait_for '[Cc]ode actions|cudagraph'; then
  wait_for '[Cc]ode actions' || true
  capture nvim-quickfix
else
  status=1
fi
tmux -L "$sock" send-keys Escape Escape ":lua torchlsp_screens.repro()" Enter
if wait_for 'repro on .debian.' && wait_for 'cudagraph-trees-off'; then
  sleep 0.5
  capture nvim-repro
else
  status=1
fi
tmux -L "$sock" send-keys Escape ":lua torchlsp_screens.traceback()" Enter
if wait_for 'torchlsp traceback: AttributeError' && wait_for 'raised in torch/_inductor'; then
  sleep 0.5
  capture nvim-traceback
else
  status=1
fi
tmux -L "$sock" send-keys Escape ":qa!" Enter
exit "$status"

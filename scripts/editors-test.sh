#!/usr/bin/env bash
# Real-editor tests for torchlsp: installs what they need (Debian packages,
# npm packages, code-server cached under /var/cache/torchlsp-editors,
# pyright under /var/cache/torchlsp-pyright), then runs, in order:
#   1. the VS Code extension's type check, unit tests and .vsix packaging
#   2. the Neovim plugin's unit tests (headless)
#   3. the Neovim end-to-end test: the real server through the plugin
#   4. the Neovim site test: the user's pyright (from npm, started by
#      Neovim) given the site by the plugin resolves torch into it
#   5. the VS Code end-to-end test: code-server + Playwright + chromium,
#      ending with pyright started on the settings the extension wrote
#   6. Neovim screenshots in tmux (the VS Code test takes its own): hover,
#      a diagnostic with its quick fixes, the threaded repro report, and a
#      traceback loaded into the quickfix list
#   7. the Emacs end-to-end test: the real server through plain Eglot
#      (Debian's emacs-nox and elpa-eglot), set up as the README says
#   8. the Emacs package test: the same through editors/emacs/torchlsp.el
#   9. a real torch 2.6 (Debian 13's python3-torch, Python 3.13) in LXC
#      container 200, entered with `pct exec 200 --` (scripts/hops/lxc.sh
#      up PREFIX trixie, taken down at the end): one Neovim case
#      (editors/nvim/test/torch26.lua) and one VS Code case (the torch 2.6
#      test of editors/e2e/vscode.test.mjs, a second workspace on target
#      ct200): hover, definition and TL001 with its cite, each expected
#      line read from the container here and handed over in
#      TORCHLSP_TORCH26_*. Skipped when not root, without LXC or without
#      the trixie image (scripts/setup.sh --test builds it); under CI=true
#      that is a failure instead.
# Screenshots go to docs/screenshots/ (TORCHLSP_SCREENSHOT_DIR overrides).
#
# Environment (all optional):
#   TORCHLSP_BIN         server binary; default: built into bin/torchlsp
#   TORCHLSP_FIXTURE_WS  workspace holding train.py; default editors/testdata/workspace
#   TORCHLSP_PYTHON      target interpreter; default /usr/bin/python3
#   TORCHLSP_PYTHONPATH  site dir holding the fixture torch; default editors/testdata/site
#   PYRIGHT_DIR          npm prefix holding pyright; default /var/cache/torchlsp-pyright
#   EDITORS_TEST_SKIP_INSTALL=1  skip apt/npm/code-server installs
# Exits non-zero when any step fails; the last line is "editors: N passed, N failed".
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export TORCHLSP_FIXTURE_WS="${TORCHLSP_FIXTURE_WS:-$repo/editors/testdata/workspace}"
export TORCHLSP_PYTHON="${TORCHLSP_PYTHON:-/usr/bin/python3}"
export TORCHLSP_PYTHONPATH="${TORCHLSP_PYTHONPATH:-$repo/editors/testdata/site}"
export TORCHLSP_SCREENSHOT_DIR="${TORCHLSP_SCREENSHOT_DIR:-$repo/docs/screenshots}"
export TORCHLSP_EDITORS_CACHE="${TORCHLSP_EDITORS_CACHE:-/var/cache/torchlsp-editors}"
export CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.99.4}"
export PYRIGHT_DIR="${PYRIGHT_DIR:-/var/cache/torchlsp-pyright}"
PYRIGHT_VERSION=1.1.414

passed=0
failed=0
failures=()
step() {
  local name="$1"
  shift
  echo "=== editors: $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== editors: $name: ok ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== editors: $name: FAILED ($((SECONDS - start)) s)"
  fi
}

install_debian() {
  local pkgs=(build-essential python3 pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev
    ripgrep chromium tmux neovim fonts-dejavu-core nodejs npm emacs-nox elpa-eglot)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # nodejs may come from elsewhere than Debian; only its presence matters.
  if command -v node >/dev/null && command -v npm >/dev/null; then
    missing=("${missing[@]/nodejs/}")
    missing=("${missing[@]/npm/}")
  fi
  local need=()
  for p in "${missing[@]}"; do [[ -n "$p" ]] && need+=("$p"); done
  ((${#need[@]} == 0)) && return 0
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
}

check_node() {
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  # code-server 4.99.4 requires Node 20 exactly; vsce 3.x runs on it.
  if [[ "$major" != 20 ]]; then
    echo "editors: Node 20 is required (found $(node --version))" >&2
    return 1
  fi
}

install_all() {
  install_debian || return 1
  check_node || return 1
  (cd editors/vscode && npm ci --no-audit --no-fund) || return 1
  (cd editors/e2e && npm ci --no-audit --no-fund) || return 1
  CODE_SERVER="$(editors/e2e/install-code-server.sh | tail -1)" || return 1
  export CODE_SERVER
  install_pyright
}

# pyright from npm, kept beside whatever else the prefix holds (other tests
# put basedpyright there too; its package claims node_modules/.bin's
# pyright-langserver, so the tests run pyright's own script).
install_pyright() {
  local have
  have="$(node -p "require('$PYRIGHT_DIR/node_modules/pyright/package.json').version" 2>/dev/null || true)"
  [[ "$have" == "$PYRIGHT_VERSION" ]] && return 0
  mkdir -p "$PYRIGHT_DIR" &&
    npm install --prefix "$PYRIGHT_DIR" --no-audit --no-fund "pyright@$PYRIGHT_VERSION"
}

build_server() {
  if [[ -n "${TORCHLSP_BIN:-}" ]]; then
    [[ -x "$TORCHLSP_BIN" ]] || { echo "TORCHLSP_BIN=$TORCHLSP_BIN is not executable" >&2; return 1; }
    return 0
  fi
  export TORCHLSP_BIN="$repo/bin/torchlsp"
  go build -o "$TORCHLSP_BIN" ./cmd/torchlsp
}

vscode_unit() {
  (cd editors/vscode && npm run -s typecheck && npm test && npm run -s package)
}

nvim_unit() {
  timeout 60 nvim --headless -u NONE --cmd "set rtp+=$repo/editors/nvim" -c "luafile $repo/editors/nvim/test/unit.lua"
}

nvim_e2e() {
  timeout 600 nvim --headless -u NONE --cmd "set rtp+=$repo/editors/nvim" -c "luafile $repo/editors/nvim/test/e2e.lua"
}

nvim_site() {
  timeout 300 nvim --headless -u NONE --cmd "set rtp+=$repo/editors/nvim" -c "luafile $repo/editors/nvim/test/site.lua"
}

vscode_e2e() {
  (cd editors/e2e && TORCHLSP_VSIX="$repo/editors/vscode/torchlsp.vsix" timeout 600 npm test)
}

nvim_screens() {
  timeout 300 editors/nvim/test/screens.sh "$TORCHLSP_SCREENSHOT_DIR"
}

emacs_e2e() {
  timeout 600 emacs --batch -l "$repo/editors/emacs/test/e2e.el"
}

emacs_package() {
  timeout 600 emacs --batch -l "$repo/editors/emacs/test/package.el"
}

# The torch 2.6 container: why it cannot run here, or nothing (status 1)
# when it can; what internal/torch26 asks before the Go tests start it.
torch26_unavailable() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "not root: the torch 2.6 container needs root (LXC)"
  elif ! command -v lxc-start >/dev/null; then
    echo "LXC is not installed (scripts/setup.sh --test installs it)"
  elif ! "$repo/scripts/hops/images.sh" path trixie >/dev/null 2>&1; then
    echo "the trixie image is not built: scripts/hops/images.sh path trixie fails (scripts/setup.sh --test builds it)"
  else
    return 1
  fi
}

torch26_prefix=""
torch26_run=""
torch26_tmp=""
torch26_ready=0

# Starts container 200 and exports what its torch says, for the cases to
# expect: TORCHLSP_TORCH26_{PCT,PYTHON,VERSION,ROOT,COMPILE_LINE,ASSERT_LINE}.
torch26_up() {
  local out pct facts version root compile_line assert_line
  # lxc.sh's run prefixes: "tlh" and 1-8 of [a-z0-9].
  torch26_prefix="tlhed$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  torch26_tmp="$(mktemp -d /tmp/torchlsp-editors-torch26.XXXXXX)"
  trap torch26_down EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # Into a file, not a pipe: nothing LXC leaves running can hold it open.
  timeout 300 "$repo/scripts/hops/lxc.sh" up "$torch26_prefix" trixie >"$torch26_tmp/up.out" || return 1
  out="$(cat "$torch26_tmp/up.out")"
  pct="$(sed -n 's/^PCT_BIN=//p' <<<"$out")/pct"
  [[ -x "$pct" ]] || { echo "lxc.sh up printed no PCT_BIN: $out" >&2; return 1; }
  torch26_run="$(dirname "$(dirname "$pct")")"
  facts="$(timeout 120 "$pct" exec 200 -- /usr/bin/python3 -c '
import inspect, torch
print(torch.__version__)
print(torch.__path__[0])
print(inspect.getsourcelines(torch.compile)[1])
')" || { echo "the container's python3 could not say where torch.compile is" >&2; return 1; }
  { read -r version && read -r root && read -r compile_line; } <<<"$facts"
  assert_line="$(timeout 60 "$pct" exec 200 -- grep -n -m1 -F 'assert torch._C._is_key_in_tls' "$root/_inductor/cudagraph_trees.py" | cut -d: -f1)"
  if [[ "$version" != 2.* || "$root" != /* || ! "$compile_line" =~ ^[0-9]+$ || ! "$assert_line" =~ ^[0-9]+$ ]]; then
    echo "the container's torch said: version '$version', root '$root', torch.compile at line '$compile_line', the thread assert at line '$assert_line'" >&2
    return 1
  fi
  export TORCHLSP_TORCH26_PCT="$pct" TORCHLSP_TORCH26_PYTHON=/usr/bin/python3 TORCHLSP_TORCH26_VERSION="$version" \
    TORCHLSP_TORCH26_ROOT="$root" TORCHLSP_TORCH26_COMPILE_LINE="$compile_line" TORCHLSP_TORCH26_ASSERT_LINE="$assert_line"
  echo "editors: torch $version in container 200 (run $torch26_prefix, $pct): torch.compile at $root/__init__.py:$compile_line, the thread assert at cudagraph_trees.py:$assert_line"
  torch26_ready=1
}

torch26_down() {
  if [[ -n "$torch26_prefix" ]]; then
    "$repo/scripts/hops/lxc.sh" down "$torch26_prefix" >/dev/null 2>&1 ||
      echo "editors: could not take down container run $torch26_prefix (scripts/hops/lxc.sh down $torch26_prefix)" >&2
    torch26_prefix=""
  fi
  # lxc.sh down leaves the run's directory and its bin/, empty.
  [[ -n "$torch26_run" ]] && rmdir "$torch26_run/bin" "$torch26_run" 2>/dev/null
  torch26_run=""
  [[ -n "$torch26_tmp" ]] && rm -rf "$torch26_tmp"
  torch26_tmp=""
  trap - EXIT INT TERM
}

torch26_missing() {
  echo "editors: CI=true and the torch 2.6 cases cannot run: $1" >&2
  return 1
}

nvim_torch26() {
  timeout 300 nvim --headless -u NONE --cmd "set rtp+=$repo/editors/nvim" -c "luafile $repo/editors/nvim/test/torch26.lua"
}

# Only the torch 2.6 test of vscode.test.mjs; its torchlsp mirrors into a
# cache of this run.
vscode_torch26() {
  (cd editors/e2e && XDG_CACHE_HOME="$torch26_tmp/cache" TORCHLSP_VSIX="$repo/editors/vscode/torchlsp.vsix" \
    timeout 600 node --test --test-concurrency=1 --test-name-pattern='^torch 2\.6 in container 200' vscode.test.mjs)
}

if [[ "${EDITORS_TEST_SKIP_INSTALL:-}" == 1 ]]; then
  export CODE_SERVER="${CODE_SERVER:-$TORCHLSP_EDITORS_CACHE/code-server-$CODE_SERVER_VERSION/node_modules/.bin/code-server}"
else
  step "install" install_all
fi
step "vscode: typecheck, unit tests, package" vscode_unit
step "nvim: unit tests" nvim_unit
step "build server" build_server
if [[ -x "${TORCHLSP_BIN:-}" ]]; then
  step "nvim: end-to-end" nvim_e2e
  step "nvim: site for the user's pyright" nvim_site
  step "vscode: end-to-end (code-server)" vscode_e2e
  step "nvim: screenshots" nvim_screens
  step "emacs: end-to-end (plain eglot)" emacs_e2e
  step "emacs: torchlsp.el" emacs_package
  if reason="$(torch26_unavailable)"; then
    if [[ "${CI:-}" == true ]]; then
      step "torch 2.6 in container 200" torch26_missing "$reason"
    else
      echo "editors: skipping the torch 2.6 cases (container 200): $reason" >&2
    fi
  else
    step "torch 2.6: container 200 up" torch26_up
    if ((torch26_ready)); then
      step "nvim: torch 2.6 in container 200" nvim_torch26
      step "vscode: torch 2.6 in container 200 (code-server)" vscode_torch26
    fi
    torch26_down
  fi
else
  echo "editors: no server binary; skipping the end-to-end tests" >&2
  failed=$((failed + 1))
  failures+=("end-to-end (no server binary)")
fi

((failed > 0)) && printf 'editors: failed: %s\n' "${failures[@]}"
echo "editors: $passed passed, $failed failed"
((failed == 0))

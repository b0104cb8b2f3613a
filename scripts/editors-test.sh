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
else
  echo "editors: no server binary; skipping the end-to-end tests" >&2
  failed=$((failed + 1))
  failures+=("end-to-end (no server binary)")
fi

((failed > 0)) && printf 'editors: failed: %s\n' "${failures[@]}"
echo "editors: $passed passed, $failed failed"
((failed == 0))

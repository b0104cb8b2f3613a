#!/usr/bin/env bash
# Installs code-server from the npm registry into a cache folder keyed by its
# version, so that re-runs skip the ~45 s native build. Prints the path of the
# code-server executable on its last line.
#
# code-server's ripgrep dependency downloads a binary from GitHub in its
# postinstall; that step is skipped when its bin/ folder already holds rg, so
# Debian's /usr/bin/rg is put there before the native modules are rebuilt.
set -euo pipefail

version="${CODE_SERVER_VERSION:-4.99.4}"
cache="${TORCHLSP_EDITORS_CACHE:-/var/cache/torchlsp-editors}"
dest="$cache/code-server-$version"
bin="$dest/node_modules/code-server/out/node/entry.js"

if [[ -f "$dest/.complete" ]]; then
  echo "$dest/node_modules/.bin/code-server"
  exit 0
fi

rm -rf "$dest"
mkdir -p "$dest"
export npm_config_nodedir=/usr npm_config_yes=true
(
  cd "$dest"
  echo '{"name":"torchlsp-code-server-cache","private":true}' >package.json
  npm install --no-audit --no-fund --ignore-scripts "code-server@$version" >&2
  # code-server's own dependencies with native parts (argon2); its postinstall
  # is replaced by the steps below.
  npm rebuild argon2 --foreground-scripts >&2
  vscode="$dest/node_modules/code-server/lib/vscode"
  # The root package's own postinstall builds lib/vscode's dependencies.
  (cd "$dest/node_modules/code-server" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --prefix lib/vscode >&2)
  mkdir -p "$vscode/node_modules/@vscode/ripgrep/bin"
  cp /usr/bin/rg "$vscode/node_modules/@vscode/ripgrep/bin/rg"
  (cd "$vscode" && npm rebuild --foreground-scripts >&2)
  (cd "$vscode" &&
    ln -sfn node_modules node_modules.asar &&
    ln -sfn code-linux.sh bin/remote-cli/code-server &&
    ln -sfn browser-linux.sh bin/helpers/browser.sh)
  (cd "$vscode/extensions" && npm install --omit=dev --no-audit --no-fund >&2)
)
test -f "$bin"
touch "$dest/.complete"
echo "$dest/node_modules/.bin/code-server"

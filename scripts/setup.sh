#!/usr/bin/env bash
# Installs what torchlsp and its tests need on Debian 12, then builds the
# binary into bin/torchlsp. Safe to run again.
#   scripts/setup.sh          the server's own needs (a real torch for the local target)
#   scripts/setup.sh --test   plus everything the test suite starts (sshd, neovim, pylsp, tmux,
#                             and pyright/basedpyright from npm for test/site)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(python3 python3-torch)
if [[ "${1:-}" == "--test" ]]; then
	packages+=(openssh-server openssh-client neovim python3-pylsp tmux procps)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}" >&2
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# test/site starts the npm language servers users run beside torchlsp.
# They are cached outside the tree (TORCHLSP_PYRIGHT_DIR overrides where);
# the pyright version is the one scripts/bench.sh measures.
PYRIGHT_VERSION=1.1.414
BASEDPYRIGHT_VERSION=1.40.1
if [[ "${1:-}" == "--test" ]]; then
	npm_dir=${TORCHLSP_PYRIGHT_DIR:-/var/cache/torchlsp-pyright}
	have() { node -p "require('$npm_dir/node_modules/$1/package.json').version" 2>/dev/null || true; }
	if [[ "$(have pyright)" != "$PYRIGHT_VERSION" || "$(have basedpyright)" != "$BASEDPYRIGHT_VERSION" ]]; then
		if ! command -v npm >/dev/null; then
			echo "setup: npm is missing: install Node.js 20 to run test/site" >&2
		else
			echo "setup: installing pyright@$PYRIGHT_VERSION basedpyright@$BASEDPYRIGHT_VERSION into $npm_dir" >&2
			sudo=""
			[[ -w "$(dirname "$npm_dir")" || -w "$npm_dir" ]] || sudo="sudo"
			$sudo mkdir -p "$npm_dir"
			$sudo npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error \
				"pyright@$PYRIGHT_VERSION" "basedpyright@$BASEDPYRIGHT_VERSION" >&2
		fi
	fi
fi

mkdir -p bin
go build -trimpath -o bin/torchlsp ./cmd/torchlsp
echo "setup: built bin/torchlsp" >&2

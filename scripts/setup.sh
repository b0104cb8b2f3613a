#!/usr/bin/env bash
# Installs what torchlsp and its tests need on Debian 12, then builds the
# binary into bin/torchlsp. Safe to run again.
#   scripts/setup.sh          the server's own needs (a real torch for the local target)
#   scripts/setup.sh --demo   plus what scripts/demo.sh shows: LXC and the container's
#                             root file system with a real torch 2.6 (images.sh trixie),
#                             and pyright from npm
#   scripts/setup.sh --test   plus everything the test suite starts (sshd, neovim, pylsp, tmux,
#                             and pyright/basedpyright from npm for test/site,
#                             the real exec hops of test/hops: LXC, Docker, Slurm)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
packages=(python3 python3-torch)
if [[ "$mode" == "--demo" || "$mode" == "--test" ]]; then
	packages+=(lxc debootstrap)
fi
if [[ "$mode" == "--test" ]]; then
	packages+=(openssh-server openssh-client neovim python3-pylsp tmux procps)
	# scripts/lint-python.sh: the Python torchlsp ships, linted as the Go is.
	packages+=(pyflakes3)
	# test/hops: network namespaces as hosts, LXC, Docker and a one-node
	# Slurm cluster, and debootstrap for their root file systems.
	packages+=(iproute2 util-linux lxc debootstrap docker.io slurm-wlm munge)
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
	# Packages of daemons (docker.io, munge, slurmd) start them on install
	# where they can; the tests start their own, so nothing may start here.
	policy_rc=""
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		policy_rc=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy_rc" >/dev/null
		$sudo chmod 0755 "$policy_rc"
		trap '$sudo rm -f "$policy_rc"' EXIT
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	if [[ -n "$policy_rc" ]]; then
		$sudo rm -f "$policy_rc"
		trap - EXIT
	fi
fi

# test/site starts the npm language servers users run beside torchlsp.
# They are cached outside the tree (TORCHLSP_PYRIGHT_DIR overrides where);
# the pyright version is the one scripts/bench.sh measures.
PYRIGHT_VERSION=1.1.414
BASEDPYRIGHT_VERSION=1.40.1
if [[ "$mode" == "--demo" || "$mode" == "--test" ]]; then
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
if [[ "$mode" == "--test" ]]; then
	# The linter the test command runs, pinned, built into bin/ from the Go
	# module proxy (about 20 s the first time, cached by Go afterwards).
	staticcheck_version=v0.8.2
	if [[ ! -x bin/staticcheck ]] || ! bin/staticcheck -version 2>/dev/null | grep -q "${staticcheck_version#v}"; then
		GOBIN="$PWD/bin" go install "honnef.co/go/tools/cmd/staticcheck@${staticcheck_version}"
	fi
fi
if [[ "$mode" == "--test" ]]; then
	# The hop tests' root file systems and image, from Debian's mirrors:
	# minutes the first time, cached under /var/cache/torchlsp-hops.
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	$sudo scripts/hops/images.sh build all
elif [[ "$mode" == "--demo" ]]; then
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	$sudo scripts/hops/images.sh build trixie
fi
go build -trimpath -o bin/torchlsp ./cmd/torchlsp
echo "setup: built bin/torchlsp" >&2

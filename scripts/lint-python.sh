#!/usr/bin/env bash
# Lints the Python the repository holds, the programs torchlsp ships
# inside its binary first (the helper and mirror script in remote/helper,
# the repro script and stand-in in server/repro/python), with Debian's
# pyflakes3 (python3-pyflakes: scripts/setup.sh --test installs it).
# testdata/ is left out: its files are inputs, odd on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v pyflakes3 >/dev/null; then
	echo "lint-python: pyflakes3 is missing: apt-get install pyflakes3 (scripts/setup.sh --test installs it)" >&2
	exit 1
fi
mapfile -t files < <(git ls-files '*.py' | grep -v '\(^\|/\)testdata/')
pyflakes3 "${files[@]}"

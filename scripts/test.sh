#!/usr/bin/env bash
# Installs everything the tests start (Debian's python3-torch, OpenSSH's
# sshd, Neovim, pylsp; code-server and Chromium for the VS Code test) and
# runs the whole suite: vet, staticcheck, the Python lint, go test. CI runs exactly this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test

echo "== go vet" >&2
go vet ./...

echo "== staticcheck" >&2
bin/staticcheck ./...

echo "== python lint" >&2
scripts/lint-python.sh

echo "== go test" >&2
go test -race -count=1 -timeout 30m ${TORCHLSP_TEST_SHORT:+-short} ./...

if [[ -x scripts/fuzz-smoke.sh ]]; then
	echo "== fuzz (short)" >&2
	scripts/fuzz-smoke.sh
fi

if [[ -x scripts/editors-test.sh && "${TORCHLSP_SKIP_EDITORS:-}" != 1 ]]; then
	echo "== real editors" >&2
	scripts/editors-test.sh
fi

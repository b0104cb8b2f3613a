#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZTIME each, 10s by default) so CI
# catches a crasher early. Long runs: FUZZTIME=5m scripts/fuzz-smoke.sh.
# A failing target leaves its input under the package's testdata/fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-10s}"
failed=()
# Every package with a Fuzz function in a _test.go file, and its targets.
while IFS= read -r dir; do
	pkg="./${dir}"
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
		echo "== fuzz ${pkg} ${target} (${fuzztime})" >&2
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
			failed+=("${pkg} ${target}")
		fi
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sed 's|^\./||' | sort -u)

if ((${#failed[@]})); then
	printf 'fuzz target failed: %s\n' "${failed[@]}" >&2
	exit 1
fi

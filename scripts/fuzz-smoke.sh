#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZTIME each, 10s by default) so CI
# catches a crasher early. Long runs: FUZZTIME=5m scripts/fuzz-smoke.sh.
# A failing target leaves its input under the package's testdata/fuzz/.
#
# Go before 1.27 can fail a target with a bare "context deadline exceeded"
# at the -fuzztime boundary, with no input found (golang/go#75804: the
# coordinator's stop races its own deadline on a loaded machine). Such a
# run, and only such a run, is tried once more; a written failing input,
# a panic or any other failure fails at once.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-10s}"
failed=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# deadline_race LOG: the run ended in the coordinator's deadline race and
# nothing else.
deadline_race() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -qE 'Failing input written to|panic:|_test\.go:[0-9]+:' "$1"
}

# Every package with a Fuzz function in a _test.go file, and its targets.
while IFS= read -r dir; do
	pkg="./${dir}"
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
		for try in 1 2; do
			again=""
			((try == 1)) || again=", again after the deadline race"
			echo "== fuzz ${pkg} ${target} (${fuzztime})${again}" >&2
			if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
				break
			fi
			if ((try == 1)) && deadline_race "$log"; then
				echo "== ${target}: 'context deadline exceeded' with no failing input: the toolchain's deadline race (golang/go#75804)" >&2
				continue
			fi
			failed+=("${pkg} ${target}")
			break
		done
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sed 's|^\./||' | sort -u)

if ((${#failed[@]})); then
	printf 'fuzz target failed: %s\n' "${failed[@]}" >&2
	exit 1
fi

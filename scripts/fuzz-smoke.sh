#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZTIME each, 10s by default) so CI
# catches a crasher or a slow input early. Long runs: FUZZTIME=5m
# scripts/fuzz-smoke.sh; some targets only: FUZZTARGETS='^FuzzRefAt$'.
# A failing target leaves its input under the package's testdata/fuzz/,
# and this script prints it.
#
# Slow inputs fail the run and are never retried. Every target's inputs
# run under internal/fuzzdeadline: an input that runs 2 s
# (TORCHLSP_FUZZ_DEADLINE), not counting the time its worker waited for a
# CPU on a busy machine, ends the fuzz worker, Go records the input, and
# this script prints it, where it was (every goroutine's stack) and how
# long it takes alone. One worker runs per target and new inputs are not
# minimised (-fuzzminimizetime 0: Go counts a minimisation's execs only
# when it ends, and stops a worker whose input outlasts it), so the exec
# count Go prints every 3 s moves unless an input is running. As a
# second guard, for what the deadline does not see, a count that stands
# still for FUZZSTALL seconds (30) makes this script stop the worker with
# SIGQUIT, which records the input it was running in the same way, and
# fails the target (also when fuzzing ends during such a stall). Each
# target prints its slowest input's times.
#
# Go before 1.27 can fail a target with a bare "context deadline exceeded"
# at the -fuzztime boundary, with no input found (golang/go#75804: the
# coordinator's stop races its own deadline on a loaded machine). Such a
# run, and only such a run, is tried again, up to three runs in all (one
# fresh-machine run met the race in 3 of its 19 targets, so one retry
# would still fail about one CI run in twenty); a written input, a slow
# input, a panic or any other failure fails at once.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-10s}"
only="${FUZZTARGETS:-.}"
stall="${FUZZSTALL:-30}"
cache="$(go env GOCACHE)/fuzz"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log="$tmp/log"
report="$tmp/report"
failed=()

# progress LOG: the last exec count (or seed count) Go printed, or "".
progress() {
	sed -nE 's/^fuzz: elapsed: .*(execs: |gathering baseline coverage: )([0-9]+).*/\2/p' "$1" | tail -n 1
}

# workers PID: the fuzz workers, the child processes of the coordinator
# PID (read from /proc: slim images have no ps).
workers() {
	local s
	for s in /proc/[0-9]*/status; do
		grep -qs "^PPid:[[:space:]]*$1\$" "$s" && basename "$(dirname "$s")"
	done
	return 0
}

# fuzz DIR PKG BIN TARGET: fuzzes TARGET with the test binary BIN in the
# directory DIR of package PKG, printing Go's output as it comes, with the
# corpus cache go test -fuzz keeps. It sets rc (the binary's status) and
# stalled (non-empty when the stall guard fired).
# verdictless: Go's own "--- FAIL: Fuzz..." line reworded, because a run
# that ends in the deadline race is retried and is no failure; the verdict
# is this script's, printed as "--- FAIL: TARGET" once it is known.
verdictless() {
	sed -u 's/^--- FAIL: \(Fuzz[A-Za-z0-9_]*\)/--- \1 ended/'
}

fuzz() {
	local dir=$1 pkg=$2 bin=$3 target=$4 shown=0 count="start" since=$SECONDS size
	: >"$log"
	rm -rf "$report" && mkdir "$report"
	(cd "$dir" && TORCHLSP_FUZZ_REPORT="$report" exec "$bin" -test.paniconexit0 -test.run='^$' \
		-test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" -test.parallel=1 \
		-test.fuzzminimizetime=0 -test.fuzzcachedir="$cache/$pkg") >"$log" 2>&1 &
	local pid=$!
	stalled=""
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.5
		size=$(stat -c %s "$log")
		((size > shown)) && tail -c +"$((shown + 1))" "$log" | head -c "$((size - shown))" | verdictless >&2
		shown=$size
		local now
		now=$(progress "$log")
		if [[ $now != "$count" ]]; then
			count=$now since=$SECONDS
		elif [[ -z $now ]]; then
			since=$SECONDS # the guard starts with Go's first line
		elif ((SECONDS - since >= stall)) && [[ -z $stalled ]]; then
			stalled=1
			echo "== ${target}: the exec count has stood at ${count:-0} for $((SECONDS - since)) s; stopping the worker (SIGQUIT) to record the input it runs" >&2
			for w in $(workers "$pid"); do kill -QUIT "$w" 2>/dev/null || true; done
		elif [[ -n $stalled ]] && ((SECONDS - since >= stall + 10)); then
			echo "== ${target}: the fuzzing process does not end; SIGQUIT" >&2
			kill -QUIT "$pid" 2>/dev/null || true
			since=$SECONDS
		fi
	done
	rc=0
	wait "$pid" || rc=$?
	size=$(stat -c %s "$log")
	((size > shown)) && tail -c +"$((shown + 1))" "$log" | verdictless >&2
	if [[ -z $stalled && -n $count ]] && ((SECONDS - since >= stall)); then
		stalled=1
		echo "== ${target}: fuzzing ended with the exec count standing at ${count} for $((SECONDS - since)) s" >&2
	fi
	return 0
}

# slowest: the slowest input's times the workers reported, as a sentence.
slowest() {
	cat "$report"/slowest-* 2>/dev/null | sort -k2,2n | tail -n 1 |
		awk '{ printf "the slowest input ran %.1f ms (%.1f ms on the clock, %.1f ms of CPU time)", $2 / 1e6, $3 / 1e6, $4 / 1e6 }'
}

# show_input DIR BIN TARGET: prints the input Go recorded, where the
# worker was when it ran past its deadline, and the input's time alone.
show_input() {
	local dir=$1 bin=$2 target=$3 input seed
	input=$(sed -nE 's|.*Failing input written to (testdata/fuzz/[^ ]+).*|\1|p' "$log" | tail -n 1)
	if [[ -z $input ]]; then # a seed corpus file (an f.Add seed is quoted in the report)
		seed=$(sed -nE "s|^failure while testing seed corpus entry: ${target}/(.+)\$|\1|p" "$log" | tail -n 1)
		if [[ -n $seed && -f $dir/testdata/fuzz/$target/$seed ]]; then
			input=testdata/fuzz/$target/$seed
		fi
	fi
	if [[ -n $input && -f $dir/$input ]]; then
		echo "== ${target}: the input ($dir/$input, $(stat -c %s "$dir/$input") bytes):" >&2
		head -c 4096 "$dir/$input" | sed 's/^/    /' >&2
		echo >&2
	fi
	for r in "$report"/overrun-*; do
		[[ -f $r ]] || continue
		echo "== ${target}: the worker's report:" >&2
		head -n 80 "$r" | sed 's/^/    /' >&2
	done
	if [[ -n $input && -f $dir/$input ]]; then
		echo "== ${target}: the input alone (go test -run=${target}/${input##*/} in $dir, 30 s at most):" >&2
		local alone=0
		(cd "$dir" && timeout 30 "$bin" -test.run="^${target}\$/^${input##*/}\$" -test.v >"$tmp/alone" 2>&1) || alone=$?
		if ((alone == 124)); then
			echo "    still running after 30 s" >&2
		else
			grep -E "^[[:space:]]*(--- |panic)" "$tmp/alone" | sed 's/^/    /' >&2 || true
		fi
	fi
}

# deadline_race: the run ended in the coordinator's deadline race and
# nothing else.
deadline_race() {
	[[ -z $stalled ]] && ! compgen -G "$report/overrun-*" >/dev/null &&
		grep -q 'context deadline exceeded' "$log" &&
		! grep -qE 'Failing input written to|failure while testing seed corpus|panic:|_test\.go:[0-9]+:|exit status' "$log"
}

# Every package (testdata excluded) with a Fuzz function in a _test.go
# file, and its targets.
while read -r dir pkg; do
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | grep -E -- "$only" | sort -u || true)
	[[ -n $targets ]] || continue
	bin="$tmp/$(echo "$dir" | tr / _).test"
	echo "== build ./${dir} with fuzzing instrumentation" >&2
	if ! go test -c -fuzz '^Fuzz' -o "$bin" "./$dir"; then
		failed+=("./${dir} (build)")
		continue
	fi
	for target in $targets; do
		for try in 1 2 3; do
			again=""
			((try == 1)) || again=", again after the deadline race (run ${try} of 3)"
			echo "== fuzz ./${dir} ${target} (${fuzztime})${again}" >&2
			fuzz "$dir" "$pkg" "$bin" "$target"
			if ((rc == 0)) && [[ -z $stalled ]]; then
				echo "== ${target}: passed; $(slowest)" >&2
				break
			fi
			if ((try < 3)) && deadline_race; then
				echo "== ${target}: 'context deadline exceeded' with no failing input and no slow one: the toolchain's deadline race (golang/go#75804)" >&2
				continue
			fi
			if [[ -n $stalled ]] || compgen -G "$report/overrun-*" >/dev/null || grep -q 'exit status 124' "$log"; then
				echo "== ${target}: an input ran past its deadline (a slow input; never retried)" >&2
				failed+=("./${dir} ${target} (slow input)")
			else
				failed+=("./${dir} ${target}")
			fi
			show_input "$dir" "$bin" "$target"
			echo "--- FAIL: ${target} (fuzz smoke of ./${dir})" >&2
			break
		done
	done
done < <(go list -f '{{.Dir}} {{.ImportPath}}' ./... | sed "s|^$PWD/||" | while read -r d p; do
	if grep -qs '^func Fuzz' "$d"/*_test.go; then echo "$d $p"; fi
done)

if ((${#failed[@]})); then
	printf 'fuzz target failed: %s\n' "${failed[@]}" >&2
	exit 1
fi

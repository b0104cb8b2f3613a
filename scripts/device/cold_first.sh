#!/usr/bin/env bash
# The cold first answer of several torchlsp builds on the GPU host's own
# torch (docs/BENCHMARKS.md, "The cold first answer measured again"): each
# round starts every build once, in a random order, each session with empty
# XDG directories, and reads lspbench's firstCorrectMs (the first correct
# definition of nn.Linear after initialize); the medians are compared by a
# permutation test.
#
# Here (with Go), for each commit C to compare:
#   git archive C | tar -x -C /tmp/C && (cd /tmp/C && go build -o /tmp/raw/torchlsp-C ./cmd/torchlsp)
#   gzip -c /tmp/raw/torchlsp-C > bench-bin/torchlsp-C.gz       # bench-bin/ in .git/info/exclude
#   go build -o /tmp/raw/lspbench ./cmd/lspbench && gzip -c /tmp/raw/lspbench > bench-bin/lspbench.gz
# There (no Go needed), carrying bench-bin/:
#   scripts/device/cold_first.sh ROUNDS SECONDS C...            # stops at whichever comes first
#
# Environment: PY (default: python3, the host's torch); BIN (default
# bench-bin); OUT (default /tmp/out): cold_first.jsonl, stderr.log.
set -uo pipefail
rounds=$1 budget=$2
shift 2
variants=("$@")
bin=${BIN:-bench-bin} out=${OUT:-/tmp/out}
mkdir -p "$out"
py=${PY:-$(command -v python3)}
for f in "$bin"/*.gz; do [[ -x ${f%.gz} ]] || { gunzip -kf "$f" && chmod +x "${f%.gz}"; }; done
echo "host: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1
facts=$out/facts.json
"$py" - >"$facts" <<'PY'
import inspect, json, sys, torch
obj = inspect.unwrap(torch.nn.Linear)
_, line = inspect.getsourcelines(obj)
json.dump({"where": {"torch.nn.Linear": {"file": inspect.getsourcefile(obj), "line": line}}}, sys.stdout)
print("torch", torch.__version__, "python", sys.version.split()[0], file=sys.stderr)
PY
# Only the probe is asked: the rounds after the first answer are not measured.
skip=$(grep -o '{"torch[^"]*"' cmd/lspbench/queries.go | tr -d '{"' | grep -vx torch.nn.Linear | paste -sd, -)
S="{\"defaultTarget\":\"bench\",\"targets\":{\"bench\":{\"python\":\"$py\",\"packages\":[\"torch\"]}}}"
start=$SECONDS
one() {
	local v=$1 x
	x=$(mktemp -d /tmp/xdg.XXXXXX)
	XDG_CACHE_HOME=$x/cache XDG_STATE_HOME=$x/state XDG_CONFIG_HOME=$x/config \
		"$bin/lspbench" run -name "$v" -tree host -rounds 1 -xref-rounds 0 -first-wait 60s \
		-facts "$facts" -skip "$skip" -out "$out/cold_first.jsonl" \
		-init-options "$S" -settings "{\"torchlsp\":$S}" -- "$bin/torchlsp-$v" serve --stdio >/dev/null 2>>"$out/stderr.log"
	rm -rf "$x"
}
for ((i = 1; i <= rounds && SECONDS - start < budget; i++)); do
	for v in $(printf '%s\n' "${variants[@]}" | shuf); do one "$v"; done
done
echo "rounds: $((i - 1)) in $((SECONDS - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$out/cold_first.jsonl" "${variants[@]}" <<'PY'
import json, random, statistics as st, sys
names = sys.argv[2:]
r = {n: [] for n in names}
for line in open(sys.argv[1]):
    d = json.loads(line)
    r[d["name"]].append(d["firstCorrectMs"])
for k in names:
    v = r[k]
    print("%-10s n=%d median %.1f ms, min %.1f, max %.1f" % (k, len(v), st.median(v), min(v), max(v)))


def perm(b, a, n=20000):
    obs = st.median(a) - st.median(b)
    pool, rng, hits = b + a, random.Random(1), 0
    for _ in range(n):
        rng.shuffle(pool)
        if abs(st.median(pool[len(b):]) - st.median(pool[:len(b)])) >= abs(obs):
            hits += 1
    return obs, hits / n


for i in range(1, len(names)):
    for b in (names[0], names[i - 1]) if i > 1 else (names[0],):
        obs, p = perm(r[b], r[names[i]])
        print("%s - %s: %+.1f ms, permutation p = %.3f" % (names[i], b, obs, p))
PY

#!/usr/bin/env bash
# The hazard repro variants on the GPU host, with real torch and CUDA:
# `torchlsp repro --hazard TL011` (kept-outputs, kept-outputs-cloned),
# `--hazard TL013` (sizes, sizes-bucketed), `--hazard TL016`
# (pending-backward, pending-backward-no-grad) and `--hazard TL017`
# (first-call-in-capture, first-call-in-capture-warmed) on the local
# target, against the field-hazard scripts and the ones beside this script.
#
# Here (with Go):   scripts/device/repro_hazards.sh build      # writes ./torchlsp
# There:            bash scripts/device/repro_hazards.sh ./torchlsp python3
#
# The target is the interpreter given (the CLI's --python, target
# "local"); with a torch that has torch.compile the variants run real
# torch, never the stand-in (every result's "stand_in" must be false: the
# summary says so). No network is needed.
#
# Environment: OUT (default ./out-repro-hazards) gets, per case, the
# CLI's report (<case>.md, <case>.err) and the run's files (<case>/: one
# <variant>.json result, its script, stdout and stderr, report.md), and
# summary.tsv: case, variant, stand_in, ok, and the verdict line.
# CASES picks cases (default all, in the order below); TIMEOUT bounds each
# CLI run in seconds (default 420; a variant is stopped after 120 s).
# XDG_ROOT (default .torchlsp/repro-hazards-xdg, which git ignores) holds
# torchlsp's cache, config and state: the mirror of the target's torch is
# made by the first run and kept for the next, also across calls of this
# script, so that the cases can be split over several calls.
#
# What torch 2.11 on one H200 should show:
#   tl011-own        kept-outputs: the kept outputs raise "accessing tensor output of CUDAGraphs that
#                    has been overwritten by a subsequent run" (or read wrong); cloned: 4 of 4 right
#   tl011-workload   the same with the stand-in MLP workload compiled for real
#   tl013-own        sizes: 2 graphs compiled, 12 CUDA graphs recorded, past
#                    cudagraph_dynamic_shape_warn_limit (8), torch's "observed 9 distinct sizes"
#                    warning; bucketed: 5 sizes
#   tl013-static     sizes (dynamic=False): 8 graphs compiled, 4 calls uncompiled past
#                    recompile_limit (8); bucketed: 5 graphs, none uncompiled
#   tl013-fullgraph  sizes (dynamic=False, fullgraph=True): 4 calls raise FailOnRecompileLimitHit
#   tl016-own        pending-backward: torch's "Unable to hit fast path of CUDAGraphs because of
#                    pending, uninvoked backwards" warning, no call replayed a CUDA graph;
#                    no_grad: no warning, about 10 of 12 calls replayed
#   tl016-workload   the same with the stand-in MLP workload (its inputs made to require grad)
#   tl017-own        first-call-in-capture: the capture raises BackendCompilerFailed ("Cannot copy
#                    between CPU and CUDA tensors during CUDA graph capture", from Inductor's pattern
#                    matcher compiling inside it); warmed: captured, 4 of 4 replays right
#   tl017-workload   the same with the stand-in MLP workload
set -uo pipefail
cd "$(dirname "$0")/../.."

if [[ "${1:-}" == build ]]; then
	CGO_ENABLED=1 go build -o "${2:-torchlsp}" ./cmd/torchlsp
	ls -l "${2:-torchlsp}"
	exit 0
fi
if [[ $# -ne 2 ]]; then
	echo "usage: $0 TORCHLSP PYTHON   (or: $0 build [OUTPUT])" >&2
	exit 2
fi
BIN=$(realpath "$1")
PYTHON=$(command -v "$2") || { echo "no interpreter $2" >&2; exit 2; }
[[ -x $BIN ]] || { echo "$1 is not an executable torchlsp" >&2; exit 2; }
OUT=${OUT:-$PWD/out-repro-hazards}
TIMEOUT=${TIMEOUT:-420}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

xdg=${XDG_ROOT:-$PWD/.torchlsp/repro-hazards-xdg}
mkdir -p "$xdg"
export XDG_CACHE_HOME=$xdg/cache XDG_CONFIG_HOME=$xdg/config XDG_STATE_HOME=$xdg/state
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cp scripts/device/hazards/tl011_kept_outputs.py scripts/device/hazards/tl013_cudagraph_sizes.py \
	scripts/device/hazards/tl016_pending_backward.py \
	scripts/device/repro_hazards/*.py "$ws/"
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count())' | tee "$OUT/torch.txt"

# case hazard script needle [flags...]: the compile call is the first line
# of the script holding needle.
all_cases=(
	"tl011-own TL011 tl011_kept_outputs.py @torch.compile --own"
	"tl011-workload TL011 tl011_kept_outputs.py @torch.compile"
	"tl013-own TL013 tl013_cudagraph_sizes.py torch.compile( --own"
	"tl013-static TL013 tl013_static_sizes.py torch.compile( --own"
	"tl013-fullgraph TL013 tl013_static_fullgraph.py torch.compile( --own"
	"tl016-own TL016 tl016_pending_backward.py torch.compile( --own"
	"tl016-workload TL016 tl016_pending_backward.py torch.compile("
	"tl017-own TL017 tl017_capture_called.py @torch.compile( --own"
	"tl017-workload TL017 tl017_capture_called.py @torch.compile("
)
want=${CASES:-}
printf 'case\tvariant\tstand_in\tok\tverdict\n' >"$OUT/summary.tsv"
for c in "${all_cases[@]}"; do
	read -r name hazard script needle flags <<<"$c"
	if [[ -n $want && " $want " != *" $name "* ]]; then
		continue
	fi
	line=$(grep -nF -m1 "$needle" "$ws/$script" | cut -d: -f1)
	echo "== $name: repro --hazard $hazard ${flags:-} $script:$line"
	# shellcheck disable=SC2086 # flags is one flag or none
	(cd "$ws" && timeout "$TIMEOUT" "$BIN" repro --hazard "$hazard" $flags --gpus 1 --timeout "$((TIMEOUT - 10))s" \
		--python "$PYTHON" "$ws/$script:$line") >"$OUT/$name.md" 2>"$OUT/$name.err"
	echo "exit $?"
	dir=$(sed -n 's/^torchlsp: files of the run on .* are in //p' "$OUT/$name.err" | tail -n 1)
	if [[ -n $dir && -d $dir ]]; then
		mkdir -p "$OUT/$name"
		cp "$dir"/* "$OUT/$name/"
	else
		echo "no run files for $name (see $OUT/$name.err)"
		tail -n 5 "$OUT/$name.err"
		continue
	fi
	for j in "$OUT/$name"/*.json; do
		"$PYTHON" - "$name" "$j" "$OUT/$name.md" <<-'EOF' | tee -a "$OUT/summary.tsv"
			import json, sys
			case, path, md = sys.argv[1:]
			r = json.load(open(path))
			verdict = ""
			for line in open(md, encoding="utf-8"):
			    if line.startswith("- %s: " % r["variant"]):
			        verdict = line[len("- %s: " % r["variant"]):].strip()
			if not verdict:
			    errors = ["%s: %s" % (e["type"], e["message"]) for e in r.get("errors") or []]
			    verdict = r.get("unsupported") or r.get("failure") or "; ".join(errors)
			print("\t".join([case, r["variant"], str(r.get("stand_in")), str(r.get("ok")), verdict[:300]]))
		EOF
	done
done
if awk -F'\t' 'NR > 1 && $3 != "False" { found = 1 } END { exit !found }' "$OUT/summary.tsv"; then
	echo "WARNING: a variant ran the stand-in (or no result), not real torch: see summary.tsv"
fi
echo "results: $OUT/summary.tsv"

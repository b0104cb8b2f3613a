#!/usr/bin/env bash
# The field hazards on the GPU host (torch 2.11): for each script under
# scripts/device/hazards/, the codes `torchlsp check` gives it against the
# host's own torch, and what running it in plain Python does there.
#
# Here (with Go):        scripts/device/hazards.sh build
# There (no Go needed):  scripts/device/hazards.sh        # carry bin/
#
# Environment: PYTHON (default /opt/torch/.venv/bin/python3); OUT (default
# ./out-hazards): one <case>.check.json and <case>.run.txt per script, and
# summary.tsv (case, codes, exit status, the run's last line).
#
# What torch 2.11 should show (docs/GPU_HOST.md keeps the measured table):
#   tl001_in_place               TL001 TL014  one of two threads fails: AssertionError (cudagraph_trees.py:359)
#   tl011_kept_outputs           TL011        exit 1: "accessing tensor output of CUDAGraphs that has
#                                             been overwritten by a subsequent run"
#   tl011_kept_outputs.fixed     (none)       exit 0, prints the sum
#   tl012_config_in_main         (none)       "worker sees recompile_limit = 64": 2.11 keeps config
#                                             process-wide, so TL012's hazard is absent and it is silent
#   tl013_dtypes_fullgraph       TL013        exit 1: FailOnRecompileLimitHit (fullgraph=True)
#   tl013_cudagraph_sizes        TL013        exit 0; with TORCH_LOGS=cudagraphs the log says
#                                             "We have observed 9 distinct sizes"
#   tl014_first_calls_in_pool    TL001 TL014  exceptions or wrong answers among 64 calls; on 2.11
#                                             TL001's AssertionError comes first, so TL014's own
#                                             effect cannot be told apart there
#   tl016_pending_backward       TL016        "verdict: hazard shown": torch warns "Unable to hit fast
#                                             path of CUDAGraphs because of pending, uninvoked backwards"
#   tl017_first_call_in_capture  TL017        "verdict: hazard shown": the capture fails on the first
#                                             call (BackendCompilerFailed on 2.11)
#   tl019_compiled_under_checkpoint        TL019   the field's failure (a recompile on autograd's thread,
#                                          GLOBAL_STATE changed: num_threads, or CheckpointError);
#                                          on 2.11 on an H100: "no recompile in the recomputation,
#                                          no CheckpointError" (TL019 is information for that)
#   tl019_compiled_under_checkpoint.fixed  (none)  "verdict: fixed": the function calling checkpoint
#                                          is compiled instead
#   tl020_grad_accumulated        TL020    "verdict: hazard shown, step 1: … overwritten by a subsequent run"
#   tl020_grad_accumulated.fixed  (none)   "verdict: no error, 3 steps, the gradients set to None at each"
#   tl020_inference_then_train    TL020    pytorch issue 135892's script: max-autotune, first calls
#                                          under inference_mode, then training; its verdict says
#                                          whether 2.11 still fails and where (no rule: see HAZARDS.md);
#                                          on 2.11: RuntimeError at step 1, "accessing tensor output of
#                                          CUDAGraphs that has been overwritten"
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/device/lib.sh
. scripts/device/lib.sh
build_if_asked "$@"

start_run hazards
cp scripts/device/hazards/*.py "$ws/"

printf 'case\tcodes\texit\tlast line\n' >"$OUT/summary.tsv"
for f in "$ws"/*.py; do
	name=$(basename "$f" .py)
	"$BIN" check --quiet --format json --python "$PYTHON" "$f" >"$OUT/$name.check.json" 2>"$OUT/$name.check.err"
	codes=$(codes_of "$OUT/$name.check.json")
	# An empty TORCH_LOGS fails torch 2.11's import: set it only when used.
	logs=()
	[[ $name == tl013_cudagraph_sizes ]] && logs=(TORCH_LOGS=cudagraphs)
	(cd "$ws" && env "${logs[@]}" PYTHONUNBUFFERED=1 timeout 300 "$PYTHON" "$f") >"$OUT/$name.run.txt" 2>&1
	rc=$?
	last=$(grep -E 'verdict|Error|distinct sizes|sees|sum|calls|threads|dtypes|sizes ran' "$OUT/$name.run.txt" | tail -n 1 | cut -c1-200)
	printf '%s\t%s\t%s\t%s\n' "$name" "$codes" "$rc" "$last" | tee -a "$OUT/summary.tsv"
done
echo "results: $OUT/summary.tsv"

#!/usr/bin/env bash
# Hazards across files on the GPU host (torch 2.11): each directory under
# scripts/device/workspaces/ is a small workspace whose compile and threads
# lie in different modules. For each, the codes `torchlsp check DIR` gives
# against the host's own torch, and what `python run.py` does there.
#
# Here (with Go):        scripts/device/workspaces.sh build
# There (no Go needed):  scripts/device/workspaces.sh        # carry bin/
#
# Environment: PYTHON (default /opt/torch/.venv/bin/python3); CASES (names
# to run, all by default); OUT (default
# ./out-workspaces): <case>.check.json, <case>.run.txt and summary.tsv
# (case, the model's findings, exit status, the run's last line).
#
# What the verdicts say, and so what torch 2.11 should do:
#   loader, engine_pool, src_layout, registry, decorated_method, http_server,
#   compiled_argument  TL001 (at the compile, and at the call in another file)
#                      exit 1: AssertionError in cudagraph_trees.get_obj in a thread
#   state_dict         TL015 at checkpoint.py:5 (the compiled module's state_dict)
#                      exit 1: "Unexpected key(s) in state_dict" loading it into the module
#   kept_outputs_across      TL011 at run.py (outputs of model.py's compiled step kept in a list)
#                            exit 1: "accessing tensor output of CUDAGraphs that has been overwritten"
#   pending_backward_across  TL016 at run.py (an eval loop without no_grad over model.py's model)
#                            exit 1: "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards"
#   capture_across           TL017 at run.py (the first call of model.py's compiled f inside a capture)
#                            exit 1: the capture fails on the first call
#   quiet_default      (none): exit 0
#   quiet_main_only    (none): exit 0
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/device/lib.sh
. scripts/device/lib.sh
build_if_asked "$@"

start_run workspaces
cp -r scripts/device/workspaces/. "$ws/"

printf 'case\tfindings\texit\tlast line\n' >"$OUT/summary.tsv"
for dir in "$ws"/*/; do
	name=$(basename "$dir")
	# CASES (space-separated names) runs only those.
	[[ -n ${CASES:-} && " $CASES " != *" $name "* ]] && continue
	"$BIN" check --quiet --format json --python "$PYTHON" "$dir" >"$OUT/$name.check.json" 2>"$OUT/$name.check.err"
	places=$("$PYTHON" -c '
import json, os, sys
found = json.load(open(sys.argv[1]))
codes = ("TL001", "TL002", "TL003", "TL011", "TL014", "TL015", "TL016", "TL017")
print(" ".join(sorted("%s %s:%d" % (d["code"].split()[0], os.path.relpath(d["file"], sys.argv[2]), d["line"]) for d in found if d["code"].startswith(codes))) or "(none)")
' "$OUT/$name.check.json" "$dir" 2>/dev/null || echo "(check failed)")
	(cd "$dir" && PYTHONUNBUFFERED=1 timeout 300 "$PYTHON" run.py) >"$OUT/$name.run.txt" 2>&1
	rc=$?
	last=$(grep -E 'failed' "$OUT/$name.run.txt" | tail -n 1 | cut -c1-240)
	printf '%s\t%s\t%s\t%s\n' "$name" "$places" "$rc" "$last" | tee -a "$OUT/summary.tsv"
done
echo "results: $OUT/summary.tsv"

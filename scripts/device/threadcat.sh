#!/usr/bin/env bash
# The thread catalogue on the GPU host (torch 2.11): for each script under
# scripts/device/threadcat/, the codes `torchlsp check` gives it against
# the host's own torch, and what running it in plain Python does there: a
# framework entering threads (the hazard) beside its near miss.
#
# Here (with Go):        scripts/device/threadcat.sh build
# There (no Go needed):  scripts/device/threadcat.sh        # carry bin/
#
# Environment: PYTHON (default /opt/torch/.venv/bin/python3); OUT (default
# ./out-threadcat): one <case>.check.json and <case>.run.txt per script,
# and summary.tsv (case, codes, exit status, the run's last lines). A
# framework the host lacks makes its scripts exit 3 (ModuleNotFoundError).
#
# What each script is for (the verdict torchlsp gives, then the plain run):
#   http_server_threading  TL001   do_POST on ThreadingHTTPServer's threads
#   http_server_single     (none)  HTTPServer runs do_POST on the main thread
#   fastapi_def            TL001   the plain def endpoint runs in the thread pool
#   fastapi_async          (none)  the async def endpoint runs on the loop's (main) thread
#   flask_threaded         TL001   app.run is threaded by default
#   flask_single           (none)  app.run(threaded=False)
#
# Measured 2026-12-06 on an H100 (torch 2.11.0+cu130), with the scripts
# then warming the model up on the main thread (three calls) before
# serving: check gave exactly the codes above; the host has no fastapi,
# uvicorn or flask (those four exit 3); both http_server scripts answered
# 8 of 8 sequential requests, so replays on other threads after a warm-up
# and recording on the main thread did not assert. The scripts now make
# no warm-up and send 16 requests from 4 clients at once, as a server
# that compiles at import sees; that run is still to be made.
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/device/lib.sh
. scripts/device/lib.sh
build_if_asked "$@"

start_run threadcat
cp scripts/device/threadcat/*.py "$ws/"

printf 'case\tcodes\texit\tlast lines\n' >"$OUT/summary.tsv"
for f in "$ws"/*.py; do
	name=$(basename "$f" .py)
	"$BIN" check --quiet --format json --python "$PYTHON" "$f" >"$OUT/$name.check.json" 2>"$OUT/$name.check.err"
	codes=$(codes_of "$OUT/$name.check.json")
	(cd "$ws" && PYTHONUNBUFFERED=1 timeout 300 "$PYTHON" "$f") >"$OUT/$name.run.txt" 2>&1
	rc=$?
	grep -q ModuleNotFoundError "$OUT/$name.run.txt" && rc=3
	last=$(grep -E 'requests answered|first error|ModuleNotFoundError' "$OUT/$name.run.txt" | tail -n 2 | tr '\n' ' ' | cut -c1-240)
	printf '%s\t%s\t%s\t%s\n' "$name" "$codes" "$rc" "$last" | tee -a "$OUT/summary.tsv"
done
echo "results: $OUT/summary.tsv"

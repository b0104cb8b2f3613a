#!/usr/bin/env bash
# The main job on the default (local) target, for real: mirror and index the
# torch that python3 imports, then answer hover and go-to-definition for
# the names in examples/threaded_compile.py, as an editor would ask.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

# With no configuration torchlsp uses python3 from PATH. When that one has
# no torch, use Debian's interpreter, which setup.sh gave python3-torch.
python=python3
if ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; then
	python=/usr/bin/python3
	echo "demo: python3 on PATH has no torch; using $python" >&2
fi

file=examples/threaded_compile.py
ask() { # ask COMMAND NEEDLE: position of the first NEEDLE in the file, then run the command there
	local cmd=$1 needle=$2 line col
	line=$(grep -n -F -m1 -- "$needle" "$file" | cut -d: -f1)
	col=$(awk -v n="$line" -v s="$needle" 'NR==n { print index($0, s) }' "$file")
	echo
	echo "\$ torchlsp $cmd $file:$line:$col    # $needle"
	bin/torchlsp "$cmd" --python "$python" "$file:$line:$col" || echo "(torchlsp $cmd had no answer there)"
}

bin/torchlsp doctor --python "$python"
ask hover "compile(model"
ask definition "compile(model"
ask definition "Linear("
ask hover "checkpoint(self"
ask definition "checkpoint(self"
ask definition "cudagraph_trees ="

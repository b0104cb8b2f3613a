#!/usr/bin/env bash
# Compares torchlsp with pyright and pylsp on one scripted editing session
# (cmd/lspbench): correctness of go-to-definition into the installed torch,
# time to the first correct answer, warm hover/definition latency and peak
# memory. Servers run one after the other, never in parallel.
#
#   scripts/bench.sh                       # Debian's torch 1.13, CI-sized (5 rounds)
#   scripts/bench.sh --rounds 50           # the numbers in docs/BENCHMARKS.md
#   scripts/bench.sh --tree /work/torch211 --facts /work/torch211-facts.json
#                                          # another torch tree (sources only)
#
# Options:
#   --rounds N       timed rounds (default 5)
#   --tree DIR       directory holding a torch/ package to read instead of
#                    Debian's; every server sees it first on its path
#   --python PY      interpreter for the servers and for expected locations
#                    (default /usr/bin/python3)
#   --facts FILE     expected locations from FILE's "where" map (needed when
#                    the tree cannot be imported, e.g. sources without .so)
#   --label TEXT     target/tree column (default from the tree)
#   --out DIR        results directory (default .bench/results)
#   --servers LIST   comma-separated subset of torchlsp,pyright,pylsp
#   --no-build       use bin/torchlsp and bin/lspbench as they are (to
#                    compare binaries built from other commits)
#   --settle DUR     after the rounds, wait up to DUR (e.g. 2m) for each
#                    server to go idle before its peak RSS is read, so that
#                    a cold row counts the whole background index build
#   --xref-rounds N  timed rounds of each references, incoming-calls and
#                    workspace-symbol question (default 20; 0 asks none)
#   --refs-first     ask the first references question right after
#                    initialize, before any definition, polled until an
#                    answer names a place (the cold start's first
#                    references; the first definition's time then
#                    includes it)
set -euo pipefail
cd "$(dirname "$0")/.."

PYRIGHT_VERSION=1.1.414
rounds=5 tree="" python=/usr/bin/python3 facts="" label="" out=.bench/results servers=torchlsp,pyright,pylsp settle=0 build=1 xref_rounds=20 refs_first=()
while (($#)); do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--tree) tree=$2; shift 2 ;;
	--python) python=$2; shift 2 ;;
	--facts) facts=$2; shift 2 ;;
	--label) label=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--servers) servers=$2; shift 2 ;;
	--settle) settle=$2; shift 2 ;;
	--xref-rounds) xref_rounds=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	--refs-first) refs_first=(-refs-first); shift ;;
	-h | --help) sed -n '2,34p' "$0"; exit 0 ;;
	*) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
want() { [[ ",$servers," == *",$1,"* ]]; }

if ((build)); then
	echo "== build" >&2
	go build -o bin/torchlsp ./cmd/torchlsp
	go build -o bin/lspbench ./cmd/lspbench
fi
[[ -x bin/torchlsp && -x bin/lspbench ]] || { echo "bench.sh: bin/torchlsp or bin/lspbench is missing (run without --no-build)" >&2; exit 2; }

pyright_dir=.bench/pyright
if want pyright; then
	installed=$(node -p "require('./$pyright_dir/node_modules/pyright/package.json').version" 2>/dev/null || true)
	if [[ "$installed" != "$PYRIGHT_VERSION" ]]; then
		echo "== npm install pyright@$PYRIGHT_VERSION" >&2
		mkdir -p "$pyright_dir"
		npm install --prefix "$pyright_dir" --no-audit --no-fund "pyright@$PYRIGHT_VERSION" >&2
	fi
fi
if want pylsp && ! command -v pylsp >/dev/null; then
	echo "== apt-get install python3-pylsp" >&2
	apt-get install -y --no-install-recommends python3-pylsp >&2
fi

work=$(mktemp -d /tmp/lspbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The tree every server reads. With --tree, a site directory holding only
# a link to DIR/torch goes first on each server's path: torchlsp's target
# and pyright's interpreter get PYTHONPATH, pyright also extraPaths, pylsp
# (jedi asks the interpreter for sys.path) PYTHONPATH.
server_env=() expect_args=() extra_paths="[]"
if [[ -n "$tree" ]]; then
	[[ -d "$tree/torch" ]] || { echo "bench.sh: $tree/torch is not a directory" >&2; exit 2; }
	site="$work/site"
	mkdir -p "$site"
	ln -s "$(cd "$tree" && pwd)/torch" "$site/torch"
	server_env=(-env "PYTHONPATH=$site")
	extra_paths="[\"$site\"]"
	target_env=",\"env\":{\"PYTHONPATH\":\"$site\"}"
	version=$(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$tree/torch/version.py" 2>/dev/null || true)
	label=${label:-"torch ${version:-?} tree"}
	if [[ -n "$facts" ]]; then
		expect_args=(-facts "$facts" -tree-dir "$site")
	else
		expect_args=(-python "$python" -python-env "PYTHONPATH=$site")
	fi
else
	target_env=""
	version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "?")
	label=${label:-"local torch $version"}
	if [[ -n "$facts" ]]; then
		expect_args=(-facts "$facts")
	else
		expect_args=(-python "$python")
	fi
fi

mkdir -p "$out"
results="$out/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
common=(-tree "$label" -rounds "$rounds" -settle "$settle" -xref-rounds "$xref_rounds" -out "$results" "${expect_args[@]}" "${refs_first[@]}")
ran=()

if want torchlsp; then
	torch_settings="{\"defaultTarget\":\"bench\",\"targets\":{\"bench\":{\"python\":\"$python\",\"packages\":[\"torch\"]$target_env}}}"
	# Fresh XDG directories: the first session mirrors and indexes (cold);
	# the second finds the cache (warm restart).
	export XDG_CACHE_HOME="$work/xdg/cache" XDG_STATE_HOME="$work/xdg/state" XDG_CONFIG_HOME="$work/xdg/config"
	for run in cold "warm restart"; do
		echo "== torchlsp ($run)" >&2
		bin/lspbench run -name "torchlsp ($run)" "${common[@]}" \
			-init-options "$torch_settings" -settings "{\"torchlsp\":$torch_settings}" \
			-- bin/torchlsp serve --stdio
	done
	unset XDG_CACHE_HOME XDG_STATE_HOME XDG_CONFIG_HOME
	ran+=("torchlsp serve --stdio")
fi
if want pyright; then
	echo "== pyright" >&2
	bin/lspbench run -name "pyright $PYRIGHT_VERSION" "${common[@]}" "${server_env[@]}" \
		-settings "{\"python\":{\"pythonPath\":\"$python\",\"analysis\":{\"extraPaths\":$extra_paths}}}" \
		-- node "$pyright_dir/node_modules/pyright/langserver.index.js" --stdio
	ran+=("node pyright/langserver.index.js --stdio")
fi
if want pylsp; then
	echo "== pylsp" >&2
	pylsp_version=$(pylsp --version 2>&1 | awk '{print $2}')
	jedi_version=$(/usr/bin/python3 -c 'import jedi; print(jedi.__version__)' 2>/dev/null || echo "?")
	bin/lspbench run -name "pylsp ${pylsp_version#v} + jedi $jedi_version" "${common[@]}" "${server_env[@]}" \
		-settings "{\"pylsp\":{\"plugins\":{\"jedi\":{\"extra_paths\":$extra_paths}}}}" \
		-- pylsp
	ran+=("pylsp")
fi

invocation="scripts/bench.sh --rounds $rounds${tree:+ --tree $tree}${facts:+ --facts $facts} --python $python"
[[ "$settle" == 0 ]] || invocation+=" --settle $settle"
[[ "$xref_rounds" == 20 ]] || invocation+=" --xref-rounds $xref_rounds"
((${#refs_first[@]} == 0)) || invocation+=" --refs-first"
bin/lspbench report -title "$label" -command "$invocation" "$results" | tee "${results%.jsonl}.md"
echo "results: $results" >&2

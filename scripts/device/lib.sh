# Shared by the GPU host's batches that run `torchlsp check` beside plain
# Python (hazards.sh, threadcat.sh, workspaces.sh). Source it from the
# repository root.

# build_if_asked builds bin/torchlsp, to carry to the host, and exits, when
# the script's first argument is "build".
build_if_asked() {
	[[ "${1:-}" == build ]] || return 0
	mkdir -p bin
	CGO_ENABLED=1 go build -o bin/torchlsp ./cmd/torchlsp
	ls -l bin/torchlsp
	exit 0
}

# base_worktree REF checks REF out into a scratch worktree, wt, removed
# at exit: the baseline a script builds beside the working tree.
base_worktree() {
	wt=$(mktemp -d)
	git worktree add -q --detach "$wt" "$1"
	trap 'git worktree remove --force "$wt"' EXIT
}

# start_run NAME sets PYTHON (default the host's), OUT (default
# ./out-NAME), BIN (the carried binary) and ws, a scratch directory removed
# at exit that holds torchlsp's cache, config and state; it writes which
# torch runs to OUT/torch.txt.
start_run() {
	PYTHON=${PYTHON:-/opt/torch/.venv/bin/python3}
	OUT=${OUT:-$PWD/out-$1}
	BIN=$PWD/bin/torchlsp
	[[ -x $BIN ]] || { echo "run '$0 build' first and carry bin/" >&2; exit 2; }
	mkdir -p "$OUT"
	ws=$(mktemp -d)
	trap 'rm -rf "$ws"' EXIT
	export XDG_CACHE_HOME=$ws/.cache XDG_CONFIG_HOME=$ws/.config XDG_STATE_HOME=$ws/.state
	"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' | tee "$OUT/torch.txt"
}

# codes_of JSON prints the codes a `torchlsp check --format json` output
# gives, sorted, or "(none)".
codes_of() {
	"$PYTHON" -c 'import json,sys; print(" ".join(sorted({d["code"].split()[0] for d in json.load(open(sys.argv[1]))})) or "(none)")' "$1" 2>/dev/null || echo "(check failed)"
}

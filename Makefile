# The common loops. Each target is a thin wrapper: the scripts are the
# source of truth, and CI runs scripts/test.sh through .ci/run.
.PHONY: all build setup test quick lint fuzz editors bench demo update-goldens

all: build

build:
	go build -trimpath -o bin/torchlsp ./cmd/torchlsp

setup:
	scripts/setup.sh --test

# Everything CI runs: vet, staticcheck, go test -race, fuzz smoke, real editors.
test:
	scripts/test.sh

# The inner loop: the engine, the wire and the CLI, no SSH, editors or fuzzing.
quick:
	go test -count=1 -short ./server/... ./lsp/... ./cmd/...

lint:
	gofmt -l $$(git ls-files '*.go')
	go vet ./...
	bin/staticcheck ./...
	scripts/lint-python.sh

fuzz:
	FUZZTIME=$${FUZZTIME:-1m} scripts/fuzz-smoke.sh

editors:
	scripts/editors-test.sh

bench:
	scripts/bench.sh

demo:
	scripts/demo.sh

# Rewrites the golden files of the data-driven engine tests.
update-goldens:
	go test ./server/ -run TestMarkers -update

# taskwire developer tasks. `make test` is what CI runs; see README.md.

GO        ?= go
FUZZTIME  ?= 30s
PKGS      := ./...

.PHONY: all test vet conformance bench fuzz soak serve

all: vet test

## test: vet and test with the race detector the main module, the interop
## module (real go-sdk and mcp-go clients against a real `taskwire serve`) and
## the stdiotest module (the go-sdk client against `taskwire serve --stdio`).
## Every suite runs even when an earlier one fails; the end of the output says
## which failed and which tests were skipped for want of PostgreSQL or Chromium.
test:
	GO='$(GO)' PKGS='$(PKGS)' bash scripts/test.sh

vet:
	$(GO) vet $(PKGS)
	cd interop && $(GO) vet ./...
	cd stdiotest && $(GO) vet ./...

## conformance: the official MCP conformance suite against one fixture server (2025-06-18, 2025-11-25 and 2026-07-28 runs), then its client scenarios against conformance/client.
conformance:
	bash scripts/conformance.sh

## bench: loopback HTTP benchmark of tools/call: taskwire vs go-sdk v1.8.0 vs bare net/http (installs wrk).
bench:
	bash scripts/bench.sh $(ARGS)

## soak: attack a real `taskwire serve` on loopback for about a minute and check it stays healthy.
soak:
	bash scripts/soak.sh $(ARGS)

## fuzz: run every fuzz target for FUZZTIME each.
fuzz:
	bash scripts/fuzz.sh $(FUZZTIME)

## serve: run the main job on its defaults.
serve:
	$(GO) run ./cmd/taskwire serve

# atm-agent-mcp — build, test, lint, bench, fuzz, demo.
#
# Every module is built and tested on its own (GOWORK=off), exactly as an
# importer of that module would see it.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

MODULES  := jsonrpcframe atmclient registry codexchild mailbridge agentmcp testscripts
# The libraries that build for Windows too (Codex's supervision is Unix-only).
WINDOWS_MODULES := jsonrpcframe atmclient registry mailbridge
BIN      := $(CURDIR)/bin
GO       ?= go
GOTEST   := GOWORK=off $(GO) test
STATICCHECK := GOWORK=off $(GO) tool -modfile=$(CURDIR)/tools/go.mod staticcheck
FUZZTIME ?= 20s
BENCHTIME ?= 1s
SOAK_SECONDS ?= 300
SOAK_SEED ?= $(shell date +%s)

# Pinned real Codex CLI versions used by the real-Codex tests: the last
# release with `codex mcp-server`, and the app-server version tested. They
# are the tested range the doctor reports; a test keeps them equal to
# codexchild/internal/codexversion, where the tests read them.
CODEX_MCP_VERSION ?= 0.153.4
CODEX_APP_VERSION ?= 0.171.0
CODEX_CACHE       := $(CURDIR)/.cache/codex

.PHONY: all build check test real-codex chromium sshd lint cross-vet cross-build bench fuzz soak demo install release dist help clean

all: build

## help: list the targets.
help:
	@grep -E '^## ' $(MAKEFILE_LIST) | sed -e 's/^## //' -e 's/: /\t/' | awk -F'\t' '{printf "  %-12s %s\n", $$1, $$2}'

## build: bin/atm-agent-mcp, the demo, and the test helpers (mockcodex, mockmodel, mockacp).
build:
	@mkdir -p $(BIN)
	cd agentmcp && GOWORK=off $(GO) build -o $(BIN)/ ./cmd/...
	cd codexchild && GOWORK=off $(GO) build -o $(BIN)/ ./testing/cmd/...

## test: lint, vet for macOS, the release targets' builds, every module with -race (testscripts, real Codex CLIs, real clients: Claude Code, Go and TypeScript SDKs, go install of a test release, the live view in headless Chromium), atmclient at full size.
test: build real-codex chromium sshd lint cross-vet cross-build
	@for m in $(MODULES); do \
	  echo "== go test -race $$m"; \
	  par=2; [ $$m = testscripts ] && par=8; \
	  (cd $$m && ATM_CODEX_MCP_BIN="$$(cat $(CODEX_CACHE)/mcp-bin-$(CODEX_MCP_VERSION) 2>/dev/null || true)" \
	             ATM_CODEX_APP_BIN="$$(cat $(CODEX_CACHE)/app-bin-$(CODEX_APP_VERSION) 2>/dev/null || true)" \
	             $(GOTEST) -race -count=1 -parallel $$par -timeout 20m ./...) || exit 1; \
	done
	@echo "== go test atmclient cross-process tests at full size (without -race, where they would take many minutes)"
	@cd atmclient && $(GOTEST) -count=1 -run '^(TestConcurrentProcesses|TestCrashSafety)$$' .

## check: the fast inner loop: vet and staticcheck, then every module's tests with -short (no npm, no real Codex or agents, no real clients, no cross builds, no -race); make test stays the gate.
check: lint
	@for m in $(MODULES); do \
	  echo "== go test -short $$m"; \
	  par=2; [ $$m = testscripts ] && par=8; \
	  (cd $$m && ATM_CODEX_MCP_BIN= ATM_CODEX_APP_BIN= ATM_REQUIRE_REAL_CODEX= \
	             $(GOTEST) -short -count=1 -parallel $$par -timeout 10m ./...) || exit 1; \
	done

## real-codex: install the pinned Codex CLIs with npm (once; cached in .cache/, one folder and one path file per version).
real-codex:
	@tools/install-codex.sh $(CODEX_CACHE) $(CODEX_MCP_VERSION) mcp-bin-$(CODEX_MCP_VERSION)
	@tools/install-codex.sh $(CODEX_CACHE) $(CODEX_APP_VERSION) app-bin-$(CODEX_APP_VERSION)

## chromium: install Debian's chromium for the browser tests of the live view (once; apt-get, as root).
chromium:
	@tools/install-chromium.sh

## sshd: install Debian's openssh-server for the tests of agents on other hosts (once; apt-get, as root; no system sshd is started: the tests run their own on loopback).
sshd:
	@tools/install-sshd.sh

## lint: go vet and staticcheck (pinned in tools/go.mod) over every module.
lint:
	@for m in $(MODULES); do \
	  echo "== lint $$m"; \
	  (cd $$m && GOWORK=off $(GO) vet ./... && $(STATICCHECK) ./...) || exit 1; \
	done

## cross-vet: every module compiles and vets for macOS, the libraries also for Windows (the tests run on Linux).
cross-vet:
	@for m in $(MODULES); do \
	  echo "== vet GOOS=darwin $$m"; \
	  (cd $$m && GOOS=darwin GOWORK=off $(GO) vet ./...) || exit 1; \
	done
	@for m in $(WINDOWS_MODULES); do \
	  echo "== vet GOOS=windows $$m"; \
	  (cd $$m && GOOS=windows GOWORK=off $(GO) vet ./...) || exit 1; \
	done

## cross-build: the binary builds for every release target (linux and darwin, amd64 and arm64).
cross-build:
	@for t in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do \
	  echo "== build $$t"; \
	  (cd agentmcp && GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 GOWORK=off $(GO) build -o /dev/null ./cmd/atm-agent-mcp) || exit 1; \
	done

## install: go install the atm-agent-mcp binary into GOBIN (or GOPATH/bin) and say where it went.
install:
	cd agentmcp && GOWORK=off $(GO) install ./cmd/atm-agent-mcp
	@dir=$$(cd agentmcp && GOWORK=off $(GO) env GOBIN); \
	[ -n "$$dir" ] || dir=$$(cd agentmcp && GOWORK=off $(GO) env GOPATH | cut -d: -f1)/bin; \
	echo "installed $$dir/atm-agent-mcp ($$($$dir/atm-agent-mcp --version))"; \
	case ":$$PATH:" in \
	  *":$$dir:"*) echo "$$dir is on your PATH: run atm-agent-mcp doctor to check the rest of the setup" ;; \
	  *) echo "$$dir is NOT on your PATH: add it (export PATH=\"$$dir:\$$PATH\" in your shell profile) or register the full path $$dir/atm-agent-mcp with Claude Code" ;; \
	esac

## release: make release VERSION=vX.Y.Z: release commit, module tags, back to development (pushes nothing).
release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=vX.Y.Z" >&2; exit 2; }
	@tools/release.sh $(VERSION)

## dist: release archives with GoReleaser (snapshot; not part of make test).
dist:
	cd tools && GOWORK=off $(GO) build -o $(BIN)/goreleaser github.com/goreleaser/goreleaser/v2
	$(BIN)/goreleaser check
	$(BIN)/goreleaser release --snapshot --clean

## bench: every benchmark, once.
bench:
	@for m in $(MODULES); do \
	  echo "== bench $$m"; \
	  (cd $$m && $(GOTEST) -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...) || exit 1; \
	done

## soak: the randomized soak test of serve (TestSoak) for SOAK_SECONDS per protocol (default 300), seed SOAK_SEED (default: the time), under -race.
soak:
	cd testscripts && SOAK_SECONDS=$(SOAK_SECONDS) SOAK_SEED=$(SOAK_SEED) $(GOTEST) -race -count=1 -timeout 0 -v -run '^TestSoak$$' .

## fuzz: a short run of every fuzz target (FUZZTIME each).
fuzz:
	@for m in $(MODULES); do \
	  for pkg in $$(cd $$m && GOWORK=off $(GO) list ./...); do \
	    dir=$$(cd $$m && GOWORK=off $(GO) list -f '{{.Dir}}' $$pkg); \
	    for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	      echo "== fuzz $$pkg $$f ($(FUZZTIME))"; \
	      (cd $$dir && $(GOTEST) -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) .) || exit 1; \
	    done; \
	  done; \
	done

## demo: a scripted MCP conversation through the binary against mockcodex.
demo: build
	@$(BIN)/atm-agent-mcp-demo -bin $(BIN)/atm-agent-mcp -codex $(BIN)/mockcodex

clean:
	rm -rf $(BIN)
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) clean -testcache >/dev/null 2>&1 || true); done

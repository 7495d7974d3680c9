# Toolwire: `make demo` runs the demo, `make test` installs everything and runs every test.
# Needs only Python 3.11+, git, Node 20 and make; everything else is installed here.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE_STAMP := client-vscode/node_modules/.installed
# `make package VSCE_TARGET=darwin-arm64` builds for another platform (vsce --target names).
VSCE_TARGET ?= linux-x64
VSIX := dist/toolwire-$(VSCE_TARGET).vsix

.PHONY: demo schema test test-python mcp-servers test-client test-panel chromium test-package test-e2e package install bench bench-panel clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11 or newer is needed"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $(STAMP)

$(NODE_STAMP): client-vscode/package.json client-vscode/package-lock.json
	cd client-vscode && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

demo: $(STAMP)
	$(BIN)/toolwire demo

test: test-client test-panel test-python test-package test-e2e

# test-python needs the client's node_modules too: a test checks that the generated
# TypeScript wire types are current (json-schema-to-typescript, pinned in package-lock.json).
test-python: $(STAMP) $(NODE_STAMP) mcp-servers
	$(BIN)/python -m pytest -q

# Real MCP servers from the registries for the MCP tests, in a cache of their own outside the
# repository (they pin their own `mcp`): venv/ (tests/mcp-servers.txt) and npm/ (tests/mcp-npm,
# installed by npm ci). The stamp holds the checksums of those pins: a cached install is reused,
# a changed pin reinstalls. tests/mcp_servers.py finds them in the same folder.
MCP_CACHE := $${TOOLWIRE_MCP_CACHE:-$$HOME/.cache/toolwire-mcp}
MCP_PINS  := tests/mcp-servers.txt tests/mcp-npm/package.json tests/mcp-npm/package-lock.json

mcp-servers:
	@cache="$(MCP_CACHE)"; want=$$(cksum $(MCP_PINS)); \
	if [ "$$(cat "$$cache/installed" 2>/dev/null)" = "$$want" ]; then exit 0; fi; \
	echo "Installing the test MCP servers into $$cache"; \
	rm -rf "$$cache/venv" "$$cache/npm" "$$cache/installed" && mkdir -p "$$cache/npm" && \
	$(PYTHON) -m venv "$$cache/venv" && \
	"$$cache/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/mcp-servers.txt && \
	cp tests/mcp-npm/package.json tests/mcp-npm/package-lock.json "$$cache/npm/" && \
	(cd "$$cache/npm" && npm ci --no-audit --no-fund --loglevel=error) && \
	echo "$$want" > "$$cache/installed"

# The wire's one source of truth: the pydantic models -> protocol.schema.json ->
# client-vscode/src/generated/wire.ts. Run after changing server/toolwire/lsp/protocol.py
# or messages.py; tests/test_wire_schema.py fails while either file is out of date.
schema: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m toolwire.lsp.schema > protocol.schema.json
	cd client-vscode && node scripts/wire.mjs

test-client: $(STAMP) $(NODE_STAMP)
	cd client-vscode && npm run --silent build && npm run --silent typecheck && TOOLWIRE_PYTHON=$(abspath $(BIN)/python) npm test

# The .vsix: the client bundle, the Toolwire server and its Python packages (bundled/libs,
# pinned by constraints.txt), LICENSE and third-party notices; .vscodeignore is an allowlist.
package: $(STAMP) $(NODE_STAMP)
	$(BIN)/python scripts/bundle_python.py --target $(VSCE_TARGET)
	cd client-vscode && npm run --silent build -- --minify
	$(BIN)/python scripts/third_party_notices.py --copied @vscode/codicons
	cp LICENSE client-vscode/LICENSE
	mkdir -p dist
	cd client-vscode && node_modules/.bin/vsce package --no-dependencies --allow-missing-repository \
		--target $(VSCE_TARGET) --out ../$(VSIX) </dev/null
	@echo "$(VSIX): $$(du -k $(VSIX) | cut -f1) KiB"

# What the .vsix holds and lacks (vsce ls and the zip itself); its server answers initialize.
test-package: package
	cd client-vscode && TOOLWIRE_VSIX=$(abspath $(VSIX)) node --test e2e/package.test.mjs

# A real VS Code (code-server 4.x on Node 24, cached in ~/.cache/toolwire-e2e; the first run
# builds it, about 2-5 minutes) with the .vsix installed, driven by Playwright and Debian's
# chromium. scripts/e2e-toolchain.sh apt-installs the Debian packages when root, else
# stops with the exact command. Screenshots: client-vscode/e2e/artifacts/.
test-e2e: package
	toolchain=$$(bash scripts/e2e-toolchain.sh) && cd client-vscode && \
		TOOLWIRE_VSIX=$(abspath $(VSIX)) TOOLWIRE_E2E_TOOLCHAIN=$$toolchain \
		node --test --test-concurrency=1 e2e/*.e2e.test.mjs

# The chat panel in headless Chromium (Debian's chromium, driven by playwright-core).
CHROMIUM ?= /usr/bin/chromium

chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing Debian's chromium for the panel tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "FAIL: Chromium is missing at $(CHROMIUM); the panel tests need it and are never skipped. Run: sudo apt-get install -y chromium" >&2; \
	    exit 1; \
	  fi; \
	fi

test-panel: $(STAMP) $(NODE_STAMP) chromium mcp-servers
	cd client-vscode && npm run --silent build && node esbuild.mjs --test && TOOLWIRE_CHROMIUM=$(CHROMIUM) TOOLWIRE_PYTHON=$(abspath $(BIN)/python) npm run --silent test:panel

# Panel figures (not a timed test): update throughput and the longest main-thread task.
bench-panel: $(STAMP) $(NODE_STAMP) chromium
	cd client-vscode && npm run --silent build && node esbuild.mjs --test && TOOLWIRE_CHROMIUM=$(CHROMIUM) TOOLWIRE_PYTHON=$(abspath $(BIN)/python) node out/bench/panel.js

bench: $(STAMP) mcp-servers
	$(BIN)/python bench/merge.py
	$(BIN)/python bench/responses.py
	$(BIN)/python bench/server.py
	$(BIN)/python bench/search_files.py
	$(BIN)/python bench/problems.py
	$(BIN)/python bench/mcp_overhead.py

clean:
	rm -rf $(VENV) client-vscode/node_modules client-vscode/dist client-vscode/bundled dist

# Toolwire: `make demo` runs the demo, `make test` installs everything and runs every test.
# Needs only Python 3.11+, git, Node 20 and make; everything else is installed here.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE_STAMP := client-vscode/node_modules/.installed

.PHONY: demo test test-python test-client install bench clean

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

test: test-client test-python

test-python: $(STAMP)
	$(BIN)/python -m pytest -q

test-client: $(STAMP) $(NODE_STAMP)
	cd client-vscode && npm run --silent build && npm run --silent typecheck && TOOLWIRE_PYTHON=$(abspath $(BIN)/python) npm test

bench: $(STAMP)
	$(BIN)/python bench/merge.py

clean:
	rm -rf $(VENV) client-vscode/node_modules client-vscode/dist

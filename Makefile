# Two commands do everything on a fresh machine with Python 3.11:
#   make run    set up .venv from the lock file, then run the whole workflow (default config)
#   make test   set up .venv from the lock file, then run the test suite
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

# Machine setting: JAX's persistent compilation cache, so that jobs (and reruns) compiling the
# same program reuse it. Results do not depend on it; set the variable to move or share it.
export JAX_COMPILATION_CACHE_DIR ?= $(CURDIR)/.jax_cache

.PHONY: run test test-all setup lock clean

setup: $(STAMP)

# The environment is rebuilt whenever the lock file or the project's metadata change.
$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11 or newer is needed, found " + sys.version'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/snakemake --cores all --workflow-profile workflow/profiles/local

test: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow"

# Everything, including the long statistical checks.
test-all: $(STAMP)
	$(VENV)/bin/python -m pytest

# Re-pin: resolve pyproject's ranges to exact versions into requirements.lock.
lock: $(STAMP)
	$(VENV)/bin/python -m pip freeze --exclude-editable > requirements.lock

clean:
	rm -rf results logs data/processed .snakemake

# Two commands do everything on a fresh machine with Python 3.11:
#   make run    set up .venv from the lock file, then run the whole workflow (default config)
#   make test   set up .venv from the lock file, then run the test suite
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

# Machine setting: JAX's persistent compilation cache, so that jobs (and reruns) compiling the
# same program reuse it. Results do not depend on it; set the variable to move or share it.
# JAX writes an entry only for programs that took at least a second to compile; most of the
# workflow's programs compile faster than that but are compiled again by every job of the same
# shape, so every entry is kept.
export JAX_COMPILATION_CACHE_DIR ?= $(CURDIR)/.jax_cache
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES ?= 0
# Machine setting: where a block of fits saves its state as it goes, so that a block job cut
# off (an interrupted run, a preempted cluster job) resumes from its last checkpoint rather than
# from step 0 (bayesirt.inference.execution.checkpoints; a resumed fit ends with the same results).
# Empty: no checkpoints.
export BAYESIRT_CHECKPOINT_DIR ?= $(CURDIR)/.fit_checkpoints
# Machine setting: XLA's CPU backend optimizes at LLVM level 1 instead of 2 and with its older
# loop emitters instead of its fusion emitters, which compiles programs faster and runs them
# slower (bayesirt.runtime, FAST_COMPILATION_FLAGS; the figures are on the Performance page): at
# the default config's scale much of a job is compilation. Results move in the last float32
# bits only; every fit record keeps the flags (device.xla_flags). Set XLA_FLAGS yourself to
# choose (XLA_FLAGS= for XLA's default, as paper-scale runs may prefer). The emitters flag is
# one the locked jaxlib knows; another jaxlib may not (XLA stops on an unknown flag).
export XLA_FLAGS ?= --xla_backend_optimization_level=1 --xla_cpu_use_fusion_emitters=false

# The README's main command. After an interruption the same command resumes: the local profile
# reruns the outputs of jobs that were cut off (rerun-incomplete), and a lock left by a run that
# was killed is cleared first, but only when no Snakemake process of this project is alive
# (workflow/unlock_if_stale.py says so when it clears one).
# ARGS: more Snakemake options or targets, e.g. make run ARGS="--configfile config/paper.yaml".
PROFILE := --workflow-profile workflow/profiles/local
ARGS ?=

.PHONY: run test test-all docs lint format setup lock wheelhouse clean

setup: $(STAMP)

# The environment is rebuilt whenever the lock file or the project's metadata change.
# A line per stage, and pip's own progress (a line per package and a bar per download): the
# install takes a few minutes and about 1.4 GB.
$(STAMP): requirements.lock pyproject.toml
	@echo "setup 1/4: checking the Python version ($(PYTHON))"
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11 or newer is needed, found " + sys.version'
	@echo "setup 2/4: creating the virtual environment $(VENV)/"
	@$(PYTHON) -m venv $(VENV)
	@echo "setup 3/4: installing the pinned packages of requirements.lock (a few minutes, about 1.4 GB)"
	@$(VENV)/bin/python -m pip install --disable-pip-version-check --progress-bar on -r requirements.lock
	@echo "setup 4/4: installing bayesirt itself (editable)"
	@$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)
	@echo "setup done: $(VENV)/ is ready (make run, make test and make docs use it)"

# The screen shows a line per finished job, each warning expected at demo scale once, and at
# the end the run's time and where the reports are (workflow/screen.py); Snakemake's full output
# stays in .snakemake/log/ and each job's in logs/.
# A failed run ends with one line per failed job, `error: <message> (rule <rule>, log <path>)`
# (workflow/explain_failure.py), after Snakemake's own report; the jobs then write their error
# only to their logs (BAYESIRT_ERROR_SUMMARY), with the traceback. VERBOSE=1 shows the
# tracebacks on the screen too (BAYESIRT_VERBOSE), and Snakemake's output in full, e.g.
# make run VERBOSE=1 ARGS="...".
VERBOSE ?=
run: $(STAMP)
	@$(VENV)/bin/python workflow/unlock_if_stale.py $(PROFILE) $(ARGS)
	@echo $(VENV)/bin/snakemake --cores all $(PROFILE) $(ARGS)
	@start=$$(date +%s); BAYESIRT_ERROR_SUMMARY=1 $(if $(VERBOSE),BAYESIRT_VERBOSE=1) \
		$(if $(VERBOSE),,$(VENV)/bin/python workflow/screen.py) $(VENV)/bin/snakemake --cores all $(PROFILE) $(ARGS) \
		|| { status=$$?; $(VENV)/bin/python workflow/explain_failure.py --since $$start; exit $$status; }

# The suite runs in TEST_WORKERS processes (pytest-xdist; the tests that share the session's run
# of the test config stay in one of them and the long tests start first, tests/conftest.py):
# almost every test is bound by compiling small programs, single-threaded, and two processes
# keep both cores of a 2-core machine busy (about twice as fast as one). XLA runs at the level
# `make run` uses (TEST_XLA_FLAGS; level 0 compiles a sixth faster, but its programs run about
# four times slower, docs/performance/, and it moved float32 results enough to stop DCM EM short
# of its tolerance). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
TEST_XLA_FLAGS ?= --xla_backend_optimization_level=1 --xla_cpu_use_fusion_emitters=false
PYTEST := XLA_FLAGS="$(TEST_XLA_FLAGS)" $(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadscope --durations=25
test: $(STAMP)
	$(PYTEST) -m "not slow"

# Everything, including the long statistical checks.
test-all: $(STAMP)
	$(PYTEST)

# The documentation site, built into site/ (offline; warnings are errors, as in CI), then its
# links checked: open site/index.html in a browser, or `$(VENV)/bin/mkdocs serve` to read it served.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	$(VENV)/bin/python tools/check_site_links.py site

# Lint and format with ruff (settings in pyproject.toml, [tool.ruff]); CI runs `make lint`'s two
# checks. `make format` rewrites: the safe lint fixes, then the formatter.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Re-pin: resolve pyproject's ranges to exact versions into requirements.lock.
lock: $(STAMP)
	$(VENV)/bin/python -m pip freeze --exclude-editable > requirements.lock

# Offline installs (compute nodes without internet): every wheel of the lock for a target Python
# and platform, plus this project's, in $(WHEELHOUSE)/; JAX is left out (a GPU node brings its
# own CUDA build) unless WITH_JAX=1. Empty WHEEL_PYTHON and WHEEL_PLATFORM mean this machine, e.g.
#   make wheelhouse WHEEL_PYTHON=3.12 WHEEL_PLATFORM=manylinux_2_28_x86_64
# then on the node: pip install --no-index --find-links wheelhouse bayesirt
WHEELHOUSE ?= wheelhouse
WHEEL_PYTHON ?=
WHEEL_PLATFORM ?=
WITH_JAX ?=
wheelhouse:
	$(PYTHON) tools/wheelhouse.py --dest $(WHEELHOUSE) \
		$(if $(WHEEL_PYTHON),--python-version $(WHEEL_PYTHON)) $(if $(WHEEL_PLATFORM),--platform $(WHEEL_PLATFORM)) \
		$(if $(WITH_JAX),--with-jax)

clean:
	rm -rf results logs data/processed .snakemake site

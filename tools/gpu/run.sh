#!/usr/bin/env bash
# One command for a GPU machine without network: install the project from a wheelhouse, check
# that JAX sees a GPU, run the measurements and study runs that the pages need most, each within
# its own time limit, and leave everything under $OUT.
#
#   OUT=/some/folder tools/gpu/run.sh            # on the GPU machine, from the project's root
#   OUT=/some/folder tools/gpu/run.sh --smoke    # the same at tiny sizes, on the CPU (tests)
#
# Before: build the wheelhouse for the machine's Python and platform, JAX left out (the machine
# brings its CUDA build), and copy it with the working tree (docs/cluster-gpu.md):
#   make wheelhouse WHEEL_PYTHON=3.12 WHEEL_PLATFORM=manylinux_2_28_x86_64
#
# Settings (environment):
#   OUT            where the results go (required); at most a few files, flat
#   WHEELHOUSE     the folder of wheels (default wheelhouse/)
#   PYTHON         the machine's Python with JAX (default python3)
#   SITE           the folder the wheels are installed into (default: a new temporary folder)
#   CASES          the cases to run, in order (default: all, in the order below)
#   CORES          Snakemake's cores for the study runs (default all)
#   STUDY_CONFIGS  the config files of the study runs (default config/paper.yaml; with --smoke
#                  config/test.yaml), later ones overriding earlier ones
#   TIMEOUT_<case> a case's time limit in seconds, e.g. TIMEOUT_bulk_replications=300
#   ALLOW_CPU=1    go on at full size when JAX finds no GPU (to check the script on a CPU)
#   BAYESIRT_COMMIT the commit the tree was copied from, for the run facts (default: git's
#                  answer, where the copy has its history; else unknown)
#
# The cases, in the order they run, with their time limits (8 minutes together):
#   bulk_replications  100 replications of the paper's normal_p5 design in one program against
#                      one fit alone, IWAE (paper settings, to convergence) and IWAVB (fixed steps)
#   ifa_normal_p5      amortized_ifa normal_p5 at the paper's 100 replications, both methods
#   ifa_mixture_p1     amortized_ifa mixture_p1 likewise
# A case that fails or runs out of time is reported and the next one still runs; the exit
# status is 0 only when every case succeeded (2: the install failed, 3: no GPU).
#
# What comes back in $OUT:
#   run.log                       everything printed, the device check's answer first
#   cases.tsv                     per case: status, seconds, time limit
#   gpu_bulk_replications.json    the bulk_replications result as a docs/performance snapshot
#                                 (date, device, command, versions); paper_plan prices a GPU
#                                 from it once committed as docs/performance/gpu_bulk_replications.json
#   study_tables.tar.gz           per study case, the page's tables and run.json in the layout of
#                                 docs/reproduction/data/<study>/ (tools/gpu/study_tables.py)
#   records.tar.gz                the fits' records and tables (results/**/*.json, *.csv)
#   logs.tar.gz                   every case's log, the workflow's logs and job benchmarks
set -uo pipefail

SMOKE=0
for arg in "$@"; do
    case "$arg" in
        --smoke) SMOKE=1 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument $arg (see --help)" >&2; exit 64 ;;
    esac
done
: "${OUT:?run.sh: set OUT to the folder the results go to}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
PYTHON="${PYTHON:-python3}"
WHEELHOUSE="${WHEELHOUSE:-wheelhouse}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/bayesirt_gpu.XXXXXX")"
SITE="${SITE:-$WORK/site}"
CORES="${CORES:-all}"

say() { echo "run.sh [$(date -u +%H:%M:%S)] $*"; }

main() {

# --- the environment --------------------------------------------------------------------------
# several jobs share the GPU: JAX must not claim most of its memory for the first one
export XLA_PYTHON_CLIENT_PREALLOCATE=false
# XLA's own optimization level (the Makefile lowers it for the CPU's short runs)
export XLA_FLAGS="${XLA_FLAGS:-}"
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-$WORK/jax_cache}"
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
if [ "$SMOKE" = 1 ]; then
    export JAX_PLATFORMS="${JAX_PLATFORMS:-cpu}"
fi
# the offline install goes first on the path; `python` (which workflow rules may call) is the
# machine's Python, which has JAX
mkdir -p "$WORK/bin"
ln -sf "$(command -v "$PYTHON")" "$WORK/bin/python"
# the cases' temporary folders inside this run's, which goes at the end even when a case was cut
# off before it could clean up
mkdir -p "$WORK/tmp"
export TMPDIR="$WORK/tmp"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$WORK/bin:$SITE/bin:$PATH"
# the commit, for the run facts, where the copied tree has no git history
if [ -z "${BAYESIRT_COMMIT:-}" ]; then
    BAYESIRT_COMMIT="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
fi
export BAYESIRT_COMMIT

say "project at $ROOT, commit $BAYESIRT_COMMIT, results to $OUT, smoke=$SMOKE"
say "install from $WHEELHOUSE into $SITE"
if ! "$PYTHON" tools/gpu/install_offline.py --wheelhouse "$WHEELHOUSE" --target "$SITE"; then
    say "the offline install failed"
    return 2
fi
say "devices"
if ! "$PYTHON" tools/gpu/check_device.py $([ "$SMOKE" = 1 ] || [ "${ALLOW_CPU:-}" = 1 ] && echo --allow-cpu); then
    return 3
fi

# --- the cases --------------------------------------------------------------------------------
if [ "$SMOKE" = 1 ]; then
    BENCH_RESULT=results/benchmarks/smoke/bulk_replications.json
    BULK=(benchmarks/run.py --smoke bulk_replications)
    read -r -a STUDY_CONFIG <<< "${STUDY_CONFIGS:-config/test.yaml}"
    NORMAL=normal  # the test config's stand-in for normal_p5
else
    BENCH_RESULT=results/benchmarks/bulk_replications.json
    # IWAVB: 100 replications at a fixed number of steps, so its step time is measured alike on
    # both paths; the data sets are simulated with every core (not timed)
    BULK=(benchmarks/run.py bulk_replications --set IWAVB_REPLICATIONS=100 --set IWAVB_SAMPLE=2
          --set IWAVB_STEPS=5000 --set "SIMULATE_CORES=$(nproc)")
    read -r -a STUDY_CONFIG <<< "${STUDY_CONFIGS:-config/paper.yaml}"
    NORMAL=normal_p5
fi
study() {  # study case: the amortized_ifa tables of one design
    "$PYTHON" tools/gpu/study_tables.py amortized_ifa --designs "$1" --config "${STUDY_CONFIG[@]}" \
        --out "$WORK/collected/$2" --cores "$CORES"
}
declare -A LIMIT=([bulk_replications]=210 [ifa_normal_p5]=150 [ifa_mixture_p1]=90)
if [ "$SMOKE" = 1 ]; then  # a smoke run checks that the cases run, not how fast
    LIMIT=([bulk_replications]=2400 [ifa_normal_p5]=900 [ifa_mixture_p1]=900)
fi
ALL=(bulk_replications ifa_normal_p5 ifa_mixture_p1)
read -r -a CHOSEN <<< "${CASES:-${ALL[*]}}"

run_case() {
    case "$1" in
        bulk_replications) "$PYTHON" "${BULK[@]}" ;;
        ifa_normal_p5) study "$NORMAL" ifa_normal_p5 ;;
        ifa_mixture_p1) study mixture_p1 ifa_mixture_p1 ;;
    esac
}
export -f run_case study
export PYTHON WORK CORES NORMAL
mkdir -p "$WORK/case_logs"
printf 'case\tstatus\tseconds\tlimit_seconds\n' > "$OUT/cases.tsv"
rm -f "$BENCH_RESULT"  # no earlier result passes for this run's
failed=0
for name in "${CHOSEN[@]}"; do
    if [ -z "${LIMIT[$name]+x}" ]; then
        say "unknown case $name (known: ${ALL[*]})"
        printf '%s\tunknown\t0\t0\n' "$name" >> "$OUT/cases.tsv"
        failed=1
        continue
    fi
    limit_var="TIMEOUT_$name"
    limit="${!limit_var:-${LIMIT[$name]}}"
    say "case $name (limit ${limit} s)"
    start=$(date +%s)
    # timeout signals the case's whole process group (Snakemake and its jobs too)
    timeout --kill-after=15 "$limit" bash -c "$(declare -p BULK STUDY_CONFIG); run_case $name" \
        2>&1 | tee "$WORK/case_logs/$name.log"
    status=${PIPESTATUS[0]}
    seconds=$(( $(date +%s) - start ))
    case $status in
        0) verdict=ok ;;
        124 | 137) verdict="timed out"; failed=1 ;;
        *) verdict="failed ($status)"; failed=1 ;;
    esac
    say "case $name: $verdict after $seconds s"
    printf '%s\t%s\t%s\t%s\n' "$name" "$verdict" "$seconds" "$limit" >> "$OUT/cases.tsv"
done

# --- what comes back --------------------------------------------------------------------------
if [ -f "$BENCH_RESULT" ]; then
    "$PYTHON" tools/gpu/snapshot.py "$BENCH_RESULT" --out "$OUT/gpu_bulk_replications.json"
fi
if [ -d "$WORK/collected" ]; then
    tar -czf "$OUT/study_tables.tar.gz" -C "$WORK/collected" .
fi
if [ -d results ]; then
    find results -name '*.json' -o -name '*.csv' | tar -czf "$OUT/records.tar.gz" -T -
fi
# the cases' own logs, and the workflow's (logs/: every job's log and Snakemake's benchmarks)
tar -czf "$OUT/logs.tar.gz" -C "$WORK" case_logs $([ -d logs ] && echo "-C $ROOT logs")
say "done; in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
cat "$OUT/cases.tsv"
return $failed
}

main 2>&1 | tee -a "$OUT/run.log"
status=${PIPESTATUS[0]}
rm -rf "$WORK"
exit "$status"

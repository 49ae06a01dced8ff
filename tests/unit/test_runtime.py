"""XLA's earlier CPU runtime for the Gibbs processes (bayesirt.runtime): same draws, no crash."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt import runtime

SRC = Path(__file__).resolve().parents[2] / "src"

# A short run of the 2PNO Gibbs sampler (20% missing) and of the mixture sampler, in a
# fresh process (XLA_FLAGS is read when the backend starts), printing the draws as JSON.
SCRIPT = """
import json, sys
import jax, numpy as np
from bayesirt import runtime
applied = runtime.use_classic_cpu_runtime() if sys.argv[1] == "classic" else False
from bayesirt.data.simulate_binary import simulate_2pno_arrays
from bayesirt.inference import gibbs, gibbs_mixture
from bayesirt.inference.sampling import SamplerSettings
y, *_ = simulate_2pno_arrays(3, 200, 10, 0.2)
s = SamplerSettings(n_chains=2, n_warmup=100, n_samples=100, chunk=50, progress_every=0)
out = {"applied": applied}
for missing in ("augment",):  # "omit" runs under the classic runtime in the workflow tests
    res = gibbs.run(jax.random.key(1), y, s, missing=missing, abilities=False)
    post = res.idata.posterior
    out[missing] = [post["discrimination"].values.tolist(), post["difficulty"].values.tolist()]
    out[missing + "_rhat"] = float(res.summary.r_hat.max())
x = np.concatenate([np.random.default_rng(0).normal(165, 6, 60), np.random.default_rng(1).normal(178, 6, 80)])
st = gibbs_mixture.init(jax.random.key(2), x)
for i in range(20):
    st = gibbs_mixture.step(jax.random.fold_in(jax.random.key(3), i), st, x)
out["mixture"] = np.asarray(st.mu).tolist()
print(json.dumps(out))
"""


def _start(mode: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC), "JAX_PLATFORMS": "cpu"}
    env.pop("XLA_FLAGS", None)
    env.pop(runtime.OPT_OUT, None)
    return subprocess.Popen([sys.executable, "-c", SCRIPT, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _result(mode: str, proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"{mode} runtime: exit {proc.returncode}\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


# slow: two processes compiling both samplers (~50 s on 2 cores) for a setting only the Gibbs
# benchmarks use; the fast tests below check when the setting applies
@pytest.mark.slow
@pytest.mark.skipif(not runtime.classic_cpu_runtime_available(), reason="this jaxlib has no classic CPU runtime")
def test_classic_runtime_gives_the_same_draws():
    # the two processes run side by side (each is mostly compilation, on one core)
    procs = {mode: _start(mode) for mode in ("default", "classic")}
    default, classic = (_result(mode, proc) for mode, proc in procs.items())
    assert classic["applied"] and not default["applied"]
    for key in ("augment", "mixture"):
        np.testing.assert_array_equal(np.asarray(classic[key]), np.asarray(default[key]), err_msg=key)


def test_no_change_once_the_backend_started(monkeypatch):
    jnp.zeros(1).block_until_ready()  # the backend is running in this process
    monkeypatch.setenv("XLA_FLAGS", "")
    assert runtime.use_classic_cpu_runtime() is False
    assert os.environ["XLA_FLAGS"] == ""


def test_opt_out(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv(runtime.OPT_OUT, "default")
    assert runtime.use_classic_cpu_runtime() is False


def test_fast_compilation_keeps_a_level_the_user_named(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=3")
    assert runtime.use_fast_compilation() is False
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=3"
    monkeypatch.setenv("XLA_FLAGS", "--foo --xla_backend_optimization_level=1")
    assert runtime.use_fast_compilation() is True


def test_fast_compilation_not_changed_once_the_backend_started(monkeypatch):
    jnp.zeros(1).block_until_ready()
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    assert runtime.use_fast_compilation() is False
    assert os.environ["XLA_FLAGS"] == "--foo"


def test_the_suite_runs_at_a_named_level():
    # tests/conftest.py asks for level 1 before JAX starts, unless XLA_FLAGS already names one
    # (the suite's time depends on it)
    assert runtime.OPTIMIZATION_LEVEL_FLAG in os.environ.get("XLA_FLAGS", "")

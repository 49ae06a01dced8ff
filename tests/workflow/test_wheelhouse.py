"""Offline install: a wheelhouse built for this machine's Python installs the project with no index.

``tools/wheelhouse.py`` (``make wheelhouse``) downloads the lock's wheels; this test builds one
for this machine (with JAX, which a CPU machine does not bring), installs the project from it
into a fresh virtual environment with ``pip install --no-index`` (inside a network namespace
with no network at all where the machine allows one), and checks that the versions installed are
the lock's and that the library computes. Building the wheelhouse needs the package registry
(pip's cache usually holds the wheels already, from the suite's own set-up); the install does not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# imports the modules that use TFP, numpyro and optax, and computes with JAX and TFP: a jitted GRM
# log-probability against its closed form, and a TFP prior's log-density
CHECK = """
import json, math, jax, jax.numpy as jnp
from importlib import metadata
from bayesirt.models import factorized_grm, grm, mgrm
from bayesirt.inference.variational import advi
from bayesirt.inference.samplers import nuts
lp = jax.jit(grm.log_prob)(jnp.array([[1]]), jnp.array([[0.3]]), jnp.array([[-0.5, 0.5]]), jnp.array([3]))
sig = lambda x: 1 / (1 + math.exp(-x))
assert abs(float(lp[0, 0]) - math.log(sig(0.8) - sig(-0.2))) < 1e-5, lp
prior = factorized_grm.priors(factorized_grm.Priors())["ability"]
assert abs(float(prior.log_prob(0.0)) + 0.5 * math.log(2 * math.pi) + math.log(prior.scale)) < 1e-5
print(json.dumps({"jax": jax.__version__, "tfp": metadata.version("tfp-nightly"),
                  "installed": {d.metadata["Name"].lower(): d.version for d in metadata.distributions()}}))
"""


def _offline_prefix() -> list[str]:
    """``unshare -n`` where this machine lets us make a namespace without network (root on
    Linux), so that nothing can be fetched; elsewhere ``--no-index`` alone keeps pip off the index."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


# four minutes in CI (building and installing every pinned wheel): under the slow marker, with
# the device script's own test (test_gpu_script.py) in the default run
@pytest.mark.slow
def test_install_from_a_wheelhouse_with_no_index(tmp_path):
    wheelhouse, venv = tmp_path / "wheelhouse", tmp_path / "venv"
    _run([sys.executable, str(ROOT / "tools" / "wheelhouse.py"), "--dest", str(wheelhouse), "--with-jax"])
    assert (wheelhouse / "bayesirt-0.1.0-py3-none-any.whl").exists()
    _run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    offline = _offline_prefix()
    print(f"offline install {'in a namespace with no network' if offline else 'with --no-index only'}")
    _run(
        [
            *offline,
            python,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-index",
            "--find-links",
            str(wheelhouse),
            "bayesirt",
        ]
    )
    out = json.loads(_run([*offline, python, "-c", CHECK], cwd=tmp_path).stdout.strip().splitlines()[-1])
    locked = dict(line.lower().split("==") for line in (ROOT / "requirements.lock").read_text().split())
    installed = {name.replace("_", "-"): v for name, v in out["installed"].items()}
    locked = {name.replace("_", "-"): v for name, v in locked.items()}
    assert out["jax"] == locked["jax"] and out["tfp"] == locked["tfp-nightly"]
    differ = {n: (v, locked[n]) for n, v in installed.items() if n in locked and v != locked[n]}
    assert not differ, f"installed versions other than the lock's: {differ}"
    extra = sorted(set(installed) - set(locked) - {"bayesirt", "pip", "setuptools"})
    assert not extra, f"installed packages the lock does not name: {extra}"


@pytest.mark.parametrize(
    "platform, expected",
    [
        (
            "manylinux_2_28_x86_64",
            [
                "manylinux_2_28_x86_64",
                "manylinux_2_17_x86_64",
                "manylinux2014_x86_64",
                "manylinux_2_12_x86_64",
                "manylinux2010_x86_64",
                "manylinux1_x86_64",
            ],
        ),
        ("macosx_11_0_arm64", ["macosx_11_0_arm64"]),
    ],
)
def test_platform_tags_widen_to_older_manylinux(platform, expected):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import wheelhouse
    finally:
        sys.path.remove(str(ROOT / "tools"))
    tags = wheelhouse.platform_tags(platform)
    assert all(tag in tags for tag in expected)
    assert tags[0] == platform and len(tags) == len(set(tags))
    if platform.startswith("manylinux_2_28"):
        assert "manylinux_2_29_x86_64" not in tags and tags[-1] == "manylinux1_x86_64"

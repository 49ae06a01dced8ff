"""Install a wheelhouse into a folder, offline, on a machine that brings its own JAX.

    python tools/gpu/install_offline.py --wheelhouse wheelhouse --target /tmp/bayesirt-site
    PYTHONPATH=/tmp/bayesirt-site python -c "import bayesirt"

A GPU machine without network has a Python with a CUDA build of JAX, and nothing of this
project's. The wheelhouse (``make wheelhouse``, for that machine's Python and platform, JAX left
out) holds everything else. This installs its wheels with ``pip install --no-index --no-deps
--target``: no index is asked, nothing is resolved, and the machine's own site-packages stay
as they are (the target folder goes first on ``PYTHONPATH``).

Left out of the install: JAX itself and the packages the machine's JAX was installed with (its
requirements and theirs, read from the installed distributions' metadata), so that the CUDA
build keeps the numpy, scipy and ml_dtypes it was built and installed against instead of the
lock's copies shadowing them. Everything else in the wheelhouse is installed, this project's
wheel included. Standard library only (this runs before anything is installed).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

JAX_ROOTS = ("jax", "jaxlib")


def canonical(name: str) -> str:
    """A distribution's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name(path: Path) -> str:
    """The distribution a wheel file holds: the part of its name before the version."""
    return canonical(path.name.split("-", 1)[0])


def requirement_name(requirement: str) -> str | None:
    """The distribution a requirement names, or None for one that applies only with an extra
    (``foo ; extra == "cuda"``): extras are not installed unless asked for."""
    if re.search(r"extra\s*==", requirement):
        return None
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return canonical(match.group(1)) if match else None


def installed_closure(roots: tuple[str, ...] = JAX_ROOTS) -> set[str]:
    """``roots`` and every installed distribution they require, transitively (names as pip
    compares them). A root that is not installed contributes nothing."""
    seen: set[str] = set()
    todo = [canonical(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo += [n for n in map(requirement_name, requires) if n and n not in seen]
    return seen


def plan(wheels: list[Path], keep: set[str]) -> tuple[list[Path], list[Path]]:
    """The wheels to install and those left out: JAX and jaxlib always (the machine brings its
    own build), and any whose distribution is in ``keep``."""
    skip = keep | {canonical(r) for r in JAX_ROOTS}
    chosen = [w for w in wheels if wheel_name(w) not in skip]
    return chosen, [w for w in wheels if wheel_name(w) in skip]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheelhouse", type=Path, required=True, help="the folder of wheels")
    parser.add_argument("--target", type=Path, required=True, help="the folder to install into")
    args = parser.parse_args(argv)
    wheels = sorted(args.wheelhouse.glob("*.whl"))
    if not wheels:
        sys.exit(f"install_offline: no wheels in {args.wheelhouse}; build them first (make wheelhouse, see its help)")
    if not any(wheel_name(w) == "bayesirt" for w in wheels):
        sys.exit(f"install_offline: {args.wheelhouse} has no bayesirt wheel; build the wheelhouse again")
    keep = installed_closure()
    if "jax" not in keep:
        sys.exit(f"install_offline: this Python ({sys.executable}) has no JAX; install its CUDA build first")
    chosen, left_out = plan(wheels, keep)
    print(f"install_offline: JAX {metadata.version('jax')} of this Python kept, with {', '.join(sorted(keep))}")
    if left_out:
        print(f"install_offline: left out of the install: {', '.join(w.name for w in left_out)}")
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-index", "--no-deps"]
    cmd += ["--quiet", "--upgrade", "--target", str(args.target), *map(str, chosen)]
    result = subprocess.run(cmd)
    if result.returncode != 0:
        sys.exit(f"install_offline: pip failed (exit {result.returncode}): {' '.join(cmd)}")
    print(f"install_offline: {len(chosen)} wheel(s) into {args.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

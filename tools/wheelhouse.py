"""Download every wheel the project needs into one folder, for an offline install elsewhere.

    python tools/wheelhouse.py --dest wheelhouse                                  # this machine
    python tools/wheelhouse.py --dest wheelhouse --python-version 3.12 --platform manylinux_2_28_x86_64

Compute nodes of many clusters have no internet. Run this where there is (a login node, a
laptop), copy the folder over, and install there with
``pip install --no-index --find-links wheelhouse bayesirt``.

What goes in: the exact versions of ``requirements.lock``, as wheels for the target Python and
platform, and a wheel of this project. JAX and jaxlib are left out unless ``--with-jax`` is
given: a GPU node brings its own CUDA build of JAX (install the lock's version with the CUDA
extra, or use the site's), and bayesirt accepts any JAX from 0.10 on.

Why a script and not one ``pip download`` call: pip refuses source distributions for a foreign
target unless it is told ``--no-deps``, then builds their metadata, and it does not widen a
``manylinux_2_28`` platform to the older manylinux tags most wheels carry. So the target's tags
are spelt out here, the lock (complete by construction) is downloaded without dependency
resolution, and the few packages published only as source are built into wheels, which must come
out pure Python (``py3-none-any``) to be usable on another platform. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
JAX_PACKAGES = ("jax", "jaxlib")
PROJECT_FILES = ("pyproject.toml", "README.md", "src")
# manylinux1 and manylinux2010/2014 are the old names of glibc 2.5, 2.12 and 2.17
LEGACY_MANYLINUX = {5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}


def platform_tags(platform: str) -> list[str]:
    """A manylinux_2_NN tag and every older manylinux tag for the same architecture (a wheel
    built for an older glibc runs on a newer one); any other tag as given."""
    match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
    if not match:
        return [platform]
    newest, arch = int(match.group(1)), match.group(2)
    tags = []
    for minor in range(newest, 4, -1):
        tags.append(f"manylinux_2_{minor}_{arch}")
        if minor in LEGACY_MANYLINUX:
            tags.append(f"{LEGACY_MANYLINUX[minor]}_{arch}")
    return tags


def locked_requirements(with_jax: bool) -> list[str]:
    lines = [line.strip() for line in LOCK.read_text().splitlines()]
    reqs = [line for line in lines if line and not line.startswith("#")]
    if with_jax:
        return reqs
    return [r for r in reqs if re.split(r"[=<>\[ ]", r, maxsplit=1)[0].lower() not in JAX_PACKAGES]


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    result = subprocess.run(cmd)
    if result.returncode != 0:
        sys.exit(f"wheelhouse: this command failed (exit {result.returncode}): {' '.join(cmd)}")


def project_wheel(dest: Path) -> None:
    """This project's wheel (pure Python, so for any target), built from a copy: setuptools
    leaves build/ beside the sources, and a stale build/ can carry deleted modules into a later
    wheel."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in PROJECT_FILES:
            source, copy = ROOT / name, Path(tmp) / name
            if source.is_dir():
                shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                shutil.copy(source, copy)
        pip("wheel", "--no-deps", "--wheel-dir", str(dest), tmp)


def canonical(name: str) -> str:
    """A distribution's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a wheel's metadata."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(name).decode("utf-8", errors="replace")
    head = text.split("\n\n", 1)[0]  # the headers end at the first blank line
    return [ln.split(":", 1)[1].strip() for ln in head.splitlines() if ln.startswith("Requires-Dist:")]


def runtime_closure(wheels: list[Path]) -> set[str]:
    """The distributions this project needs to run: its own requirements (not its extras for
    tests, documentation and linting) and theirs, read from the wheels' metadata. A requirement
    that applies only with an extra counts when that extra is asked for (``tfp-nightly[jax]``);
    other markers (Python version, platform) are not evaluated, so the set may hold a package the
    target does not need, never lack one it does."""
    by_name = {canonical(w.name.split("-", 1)[0]): w for w in wheels}
    needed: dict[str, set[str]] = {}
    todo: list[tuple[str, set[str]]] = [("bayesirt", set())]
    while todo:
        name, extras = todo.pop()
        if name in needed and extras <= needed[name]:
            continue
        needed[name] = needed.get(name, set()) | extras
        if name not in by_name:
            continue  # not in the wheelhouse (JAX, left out on purpose)
        for req in wheel_requirements(by_name[name]):
            spec, _, marker = req.partition(";")
            wanted = re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
            if wanted and not set(wanted) & needed[name]:
                continue
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", spec)
            if match:
                sub = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
                todo.append((canonical(match.group(1)), sub))
    return set(needed)


def prune(dest: Path, runtime_only: bool, leave_out: list[str]) -> list[Path]:
    """Delete the wheels a run does not need (``runtime_only``: the lock's tools for tests,
    documentation and linting) and those named in ``leave_out`` (packages the target machine
    brings, e.g. with its JAX); returns the deleted ones."""
    wheels = sorted(dest.glob("*.whl"))
    keep = runtime_closure(wheels) if runtime_only else {canonical(w.name.split("-", 1)[0]) for w in wheels}
    keep -= {canonical(n) for n in leave_out} - {"bayesirt"}
    gone = [w for w in wheels if canonical(w.name.split("-", 1)[0]) not in keep]
    for wheel in gone:
        wheel.unlink()
    return gone


def build(
    dest: Path, python_version: str | None, platform: str | None, with_jax: bool, project_only: bool = False
) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    if project_only:
        project_wheel(dest)
        return sorted(dest.glob("*.whl"))
    requirements = dest / "requirements.txt"
    requirements.write_text("\n".join(locked_requirements(with_jax)) + "\n")
    target = []
    if python_version:
        target += ["--python-version", python_version]
    for tag in platform_tags(platform) if platform else []:
        target += ["--platform", tag]
    pip("download", "--no-deps", *target, "--dest", str(dest), "-r", str(requirements))
    # packages published only as source: build them; a foreign target takes pure Python only
    for sdist in sorted([*dest.glob("*.tar.gz"), *dest.glob("*.zip")]):
        built = dest / "built"
        pip("wheel", "--no-deps", "--wheel-dir", str(built), str(sdist))
        for wheel in built.glob("*.whl"):
            if target and not wheel.name.endswith("-py3-none-any.whl") and "-py2.py3-none-any" not in wheel.name:
                sys.exit(
                    f"wheelhouse: {sdist.name} has no wheel for the target and builds only for this "
                    f"machine ({wheel.name}); build it on the target"
                )
            wheel.rename(dest / wheel.name)
        built.rmdir()
        sdist.unlink()
    project_wheel(dest)
    return sorted(dest.glob("*.whl"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", type=Path, default=ROOT / "wheelhouse", help="the folder (default: wheelhouse/)")
    parser.add_argument("--python-version", help="target Python, e.g. 3.12 (default: this interpreter's)")
    parser.add_argument("--platform", help="target platform tag, e.g. manylinux_2_28_x86_64 (default: this machine's)")
    parser.add_argument("--with-jax", action="store_true", help="add the lock's (CPU) jax and jaxlib")
    parser.add_argument(
        "--project-only",
        action="store_true",
        help="only this project's wheel (for a machine that has every other package; a quick check of the install)",
    )
    parser.add_argument(
        "--runtime-only",
        action="store_true",
        help="only what a run needs: leave out the lock's tools for tests, documentation and linting",
    )
    parser.add_argument(
        "--leave-out",
        nargs="+",
        default=[],
        metavar="NAME",
        help="packages the target machine brings (e.g. numpy scipy ml_dtypes opt_einsum with its JAX)",
    )
    args = parser.parse_args(argv)
    if bool(args.python_version) != bool(args.platform):
        parser.error("give --python-version and --platform together, or neither (this machine)")
    build(args.dest, args.python_version, args.platform, args.with_jax, args.project_only)
    gone = prune(args.dest, args.runtime_only, args.leave_out)
    if gone:
        print(f"wheelhouse: left out {len(gone)} wheels: {', '.join(w.name.split('-', 1)[0] for w in gone)}")
    wheels = sorted(args.dest.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels) / 2**20
    print(f"wheelhouse: {len(wheels)} wheels, {size:.0f} MiB, in {args.dest}")
    print(f"install offline with: pip install --no-index --find-links {args.dest} bayesirt")
    return 0


if __name__ == "__main__":
    sys.exit(main())

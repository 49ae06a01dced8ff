"""Say which JAX devices this machine has, and refuse to go on without a GPU.

    python tools/gpu/check_device.py              # exit 3 unless JAX's default backend is a GPU
    python tools/gpu/check_device.py --allow-cpu  # the CPU smoke run of tools/gpu/run.sh

Minutes on a lent GPU are few: a run that silently fell back to the CPU (a CUDA build that
does not match the driver, a missing plugin) would spend them on figures that mean nothing, so
the device script stops here instead. Prints JAX's version, its devices and where bayesirt was
imported from (the offline install's folder, not a checkout's sources).
"""

from __future__ import annotations

import argparse
import json
import sys

GPU_PLATFORMS = ("gpu", "cuda", "rocm")


def describe() -> dict:
    import jax

    import bayesirt

    devices = jax.devices()
    return {
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devices],
        "kinds": sorted({getattr(d, "device_kind", "") for d in devices}),
        "bayesirt": bayesirt.__file__,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--allow-cpu", action="store_true", help="go on without a GPU (smoke runs)")
    args = parser.parse_args(argv)
    found = describe()
    print(json.dumps(found, indent=1), flush=True)
    if found["backend"] not in GPU_PLATFORMS and not args.allow_cpu:
        print(
            f"check_device: JAX runs on {found['backend']} ({', '.join(found['devices'])}), not on a GPU: "
            "check the CUDA build of JAX and the driver (pass --allow-cpu, or run.sh --smoke, to go on anyway)",
            file=sys.stderr,
        )
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One seed per job, derived from the config seed and the job's identity.

Any single output can then be rebuilt alone and comes out identical, whatever else ran.
"""

from __future__ import annotations

import hashlib


def derive(base_seed: int, *parts) -> int:
    """A 31-bit seed from the base seed and any strings/numbers naming the job."""
    text = "/".join([str(int(base_seed))] + [str(p) for p in parts])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") & 0x7FFFFFFF

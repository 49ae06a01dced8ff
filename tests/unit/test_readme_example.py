"""The README's library example runs as written, and fits what it says it fits."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_library_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert len(blocks) == 1, "the README has one Python example"
    code = blocks[0]
    assert "from bayesirt import inference" in code and "studies" not in code  # the library API, not the workflow's
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    grm, iwae = proc.stdout.strip().splitlines()[-2:]
    assert grm.startswith("True ") and iwae.startswith("True ")  # both fits converged

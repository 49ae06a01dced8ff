"""How many fits of a block one program steps on a CPU: plain Python (no JAX), so that the
workflow can plan a block's cores from it as the fitting code does (``inference.execution.bulk``)."""

# Most fits stepped together by one program on a CPU (inference.execution.bulk, where the figures are: 4
# and 8 were the fastest)
CPU_PROGRAM_WIDTH = 8


def cpu_program_width(n_fits: int) -> int:
    """Fits per program for a block of ``n_fits`` on a CPU: as few groups of at most
    ``CPU_PROGRAM_WIDTH`` as hold them, of equal size (10 fits: two groups of 5, which two
    worker processes share evenly, not 8 and 2). It depends on the block alone, never on the
    cores, so that results do not either."""
    groups = -(-n_fits // CPU_PROGRAM_WIDTH)
    return -(-n_fits // groups)

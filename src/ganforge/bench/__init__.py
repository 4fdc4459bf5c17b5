"""`ganforge bench`: how fast the real training step runs on this machine, with how much memory, at what share of
the device's peak FLOP/s, and with which `--batch-gpu`, on synthetic data (no dataset needed).

    from ganforge.bench import BenchOptions, run
    result = run(BenchOptions(cfg="paper256", precision="bf16", auto_batch=True))  # dict, schema in docs/bench.md

Under `torchrun` every rank measures alone, then all together, which gives the scaling efficiency.
"""

from ganforge.bench.options import BenchOptions
from ganforge.bench.render import table
from ganforge.bench.run import run

__all__ = ["BenchOptions", "run", "table"]

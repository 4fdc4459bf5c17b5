"""`ganforge bench`: the real training step timed on synthetic data. Its options: the `train` options it shares
(train's own declarations) and its own, declared on `BenchOptions` (`ganforge.bench.options`)."""

import click

from ganforge.bench.options import BENCH_OPTIONS
from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge bench --cfg paper256 --precision bf16 --batch-gpu auto",
        "ganforge bench --data faces256.zip --repeat 5 --json",
        "ganforge bench --cfg paper256 --batch-gpu 8 --compile reduce-overhead",
    ),
)
@declared_options(BENCH_OPTIONS)
def bench(batch_gpu: str | None, **flags):
    """Time the real training step on synthetic data (shaped like --data's images when given): img/s with its
    spread over --repeat, per-phase ms, memory, TFLOP/s against the device's peak, and with --batch-gpu auto the
    batch to use; --aug ada times p = 0, where a run starts. Multi-GPU: torchrun -m ganforge bench."""
    import json

    from ganforge import bench as bench_

    options = bench_.BenchOptions.from_flags(batch_gpu, **flags)
    result = bench_.run(options)
    if result is None:
        return
    click.echo(json.dumps(result, indent=2) if options.as_json else bench_.table(result))
    if result["spread"]["warning"] is not None:
        click.echo(result["spread"]["warning"], err=True)

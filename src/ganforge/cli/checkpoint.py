"""`ganforge checkpoint verify` and `ganforge checkpoint diff`: is a checkpoint intact, and what differs between two.

Heavy modules are imported inside each command so that `ganforge --help` stays instant. The options of `diff` are
derived from the declarations on `DiffOptions` (`ganforge.compare.options`).
"""

from pathlib import Path

import click

from ganforge.cli.declared import declared_options
from ganforge.cli.help import examples
from ganforge.compare.options import DIFF_OPTIONS, DiffOptions
from ganforge.errors import UserError
from ganforge.option import given


@click.group("checkpoint")
def checkpoint_group():
    """Inspect training checkpoints and snapshots: is a checkpoint intact, and what differs between two."""


@checkpoint_group.command("verify", epilog=examples("ganforge checkpoint verify runs/00000-faces-auto-gpus1-batch32"))
@click.argument("path", type=click.Path(path_type=Path))
def checkpoint_verify(path: Path):
    """Check a checkpoint folder (ckpt-*, or a copy under any name: a folder with a manifest.json), or every
    checkpoint of a run, exactly as resuming does: the manifest, the size and SHA-256 of every file, and every entry
    of the state a resume restores; exit 0 when all verify, 2 otherwise, one line per checkpoint that does not
    (--resume refuses it; rerunning a run skips it)."""
    from ganforge.checkpoint.inspect import verify

    verdicts = verify(path)
    for verdict in verdicts:
        if verdict.problem is None:
            progress = "" if verdict.nimg is None else f" ({verdict.nimg / 1000:g} kimg)"
            click.echo(f"ok: {verdict.path}{progress}")
    bad = [f"checkpoint {v.path}: {v.problem}" for v in verdicts if v.problem is not None]
    if bad and len(verdicts) > 1:
        click.echo(f"{len(bad)} of {len(verdicts)} checkpoints do not verify; resuming skips them")
    if bad:
        raise UserError(*bad)


@checkpoint_group.command(
    "diff",
    epilog=examples(
        "ganforge checkpoint diff run-a/checkpoints/ckpt-000400000 run-b/checkpoints/ckpt-000400000",
        "ganforge checkpoint diff network-a.safetensors network-b.safetensors --limit 20",
    ),
)
@click.argument("first", type=click.Path(path_type=Path))
@click.argument("second", type=click.Path(path_type=Path))
@declared_options(DIFF_OPTIONS)
@click.pass_context
def checkpoint_diff(ctx: click.Context, first: Path, second: Path, **options):
    """List what differs between two checkpoints (each a checkpoint folder, or a run: its newest checkpoint) or two
    snapshots (.safetensors): tensors with their max abs difference, state fields and metadata (architecture,
    constructor arguments, meta) with both values. A snapshot and a checkpoint: the snapshot's tensors against the
    checkpoint's G_ema (a discriminator file's against its D). Exit 0 when identical, 1 when they differ (as diff
    does), 2 when either cannot be read."""
    from ganforge.compare import compare

    limit = DiffOptions(**given(options)).limit
    comparison = compare(first, second)
    if comparison.scope is not None:
        click.echo(f"comparing {comparison.scope}")
    pair = f"{comparison.first} and {comparison.second}"
    differences = comparison.differences
    if not differences:
        click.echo(f"identical: {pair}")
        ctx.exit(0)
    for difference in differences[:limit]:
        click.echo(f"{difference.where}: {difference.description}")
    more = f" (first {limit} shown)" if len(differences) > limit else ""
    click.echo(f"{len(differences)} entries differ between {pair}{more}")
    ctx.exit(1)

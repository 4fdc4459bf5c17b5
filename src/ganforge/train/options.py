"""The options of `ganforge train`, grouped by purpose (STYLE 18). Imports only click, so `ganforge --help` stays fast.

Options left at None take the preset's value (`--dry-run` shows what they resolved to).
"""

import click

from ganforge.config import AUGMENTS, PRECISIONS, PRESETS

_PRESET = "[default: from --cfg]"
_GROUPS: dict[str, list] = {}


def _option(group: str, *names, **kwargs):
    """click.option that also records which help section the option belongs to."""
    _GROUPS.setdefault(group, []).append(names[0])
    return click.option(*names, **kwargs)


TRAIN_OPTIONS = [
    _option("Data", "--data", type=click.Path(exists=False), required=True, help="Dataset: folder, zip or archive."),
    _option("Data", "--cond", is_flag=True, help="Condition on the dataset's class labels."),
    _option("Data", "--mirror", is_flag=True, help="Add x-flipped copies of the images."),
    _option("Data", "--workers", type=click.IntRange(min=0), default=2, help="DataLoader processes per GPU."),
    _option("Configuration", "--cfg", type=click.Choice(list(PRESETS)), default="auto",
            help="Preset: auto derives batch, gamma and EMA from the resolution; stylegan3-t/-r train the alias-free "
                 "generator the same way; tiny and tiny3 are small CPU settings."),
    _option("Configuration", "--kimg", type=click.FloatRange(min=0, min_open=True), help=f"Train this long. {_PRESET}"),
    _option("Configuration", "--batch", type=click.IntRange(min=1), help=f"Global batch size. {_PRESET}"),
    _option("Configuration", "--batch-gpu", type=click.IntRange(min=1),
            help="Micro-batch per device; smaller than batch/GPUs means accumulation.  [default: batch/GPUs]"),
    _option("Configuration", "--gamma", type=click.FloatRange(min=0), help=f"R1 weight. {_PRESET}"),
    _option("Configuration", "--glr", type=click.FloatRange(min=0, min_open=True), help=f"G learning rate. {_PRESET}"),
    _option("Configuration", "--dlr", type=click.FloatRange(min=0, min_open=True), help=f"D learning rate. {_PRESET}"),
    _option("Configuration", "--seed", type=click.IntRange(min=0), default=0, help="Weights, data order, latents."),
    _option("Augmentation", "--aug", type=click.Choice(AUGMENTS), default="ada", help="Adaptive augmentation or none."),
    _option("Augmentation", "--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.6,
            help="ADA target for E[sign(D(real))]."),
    _option("Augmentation", "--ada-kimg", type=click.FloatRange(min=0, min_open=True), default=500,
            help="ADA speed: p can go from 0 to 1 in this many kimg."),
    _option("Precision and speed", "--precision", type=click.Choice(PRECISIONS), default="fp32",
            help="fp16 needs CUDA; bf16 is the simple fast choice on recent GPUs."),
    _option("Precision and speed", "--fp16-res", type=click.IntRange(min=0),
            help="Official recipe: run the N highest resolutions in fp16 with clamping (needs --precision fp16; "
                 "stylegan3 presets: 4, others: 0 = autocast)."),
    _option("Precision and speed", "--compile", is_flag=True, help="torch.compile the main-phase forwards."),
    _option("Precision and speed", "--channels-last", is_flag=True, help="channels_last memory format."),
    _option("Precision and speed", "--deterministic", is_flag=True,
            help="Deterministic GPU kernels (bitwise-reproducible on GPU; CPU always is)."),
    _option("Precision and speed", "--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto"),
    _option("Output", "--outdir", type=click.Path(file_okay=False), required=True, help="Where run folders go."),
    _option("Output", "--tick", type=click.FloatRange(min=0, min_open=True), help=f"kimg per status line. {_PRESET}"),
    _option("Output", "--snap", type=click.IntRange(min=1), help=f"Ticks per snapshot and checkpoint. {_PRESET}"),
    _option("Output", "--metrics", default="",
            help="Comma-separated metrics of G_ema at each snapshot, e.g. fid50k_full (see `ganforge metrics`)."),
    _option("Output", "--dry-run", is_flag=True, help="Print the resolved configuration and exit."),
    _option("Checkpoints", "--resume", default="auto",
            help="auto: continue the newest matching run in OUTDIR; new: start a new run; PATH: a checkpoint "
                 "folder, or a snapshot (.safetensors, weights only: D, optimisers and progress start fresh), or "
                 "G.safetensors,D.safetensors (a snapshot and a discriminator file from `ganforge import`)."),
    _option("Checkpoints", "--keep-last", type=click.IntRange(min=1), default=3, help="Checkpoints to keep."),
    _option("Checkpoints", "--keep-every", type=click.FloatRange(min=0, min_open=True),
            help="Also keep one checkpoint per this many kimg, for good."),
    _option("Checkpoints", "--keep-max-age", type=click.FloatRange(min=0, min_open=True),
            help="Also keep checkpoints younger than this many days."),
    _option("Checkpoints", "--allow-config-change", is_flag=True,
            help="Resume even if the training maths changed (the differences are listed)."),
]  # fmt: skip


class GroupedCommand(click.Command):
    """A command whose --help lists options under section headings."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {p.name: p.get_help_record(ctx) for p in self.get_params(ctx)}
        for group, names in _GROUPS.items():
            keys = [n.lstrip("-").replace("-", "_") for n in names]
            with formatter.section(group):
                formatter.write_dl([records[k] for k in keys if records.get(k)])
        grouped = {n.lstrip("-").replace("-", "_") for names in _GROUPS.values() for n in names}
        rest = [rec for name, rec in records.items() if name not in grouped and rec]
        if rest:
            with formatter.section("Other"):
                formatter.write_dl(rest)


def train_options(function):
    """Apply every `ganforge train` option to a click command function."""
    for option in reversed(TRAIN_OPTIONS):
        function = option(function)
    return function

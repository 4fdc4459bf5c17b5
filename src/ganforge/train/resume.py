"""Where a run continues from (`--resume auto|new|RUNDIR|PATH`) and which run directory it writes to (the rule is in
rundir.py).

`find_sources` looks at the file system once, when the options are resolved (`resolver.observe`): what --resume
names, and the runs of OUTDIR this command may continue. `choose_source` then picks what the resolved options start
from, without looking again (--precision auto keeps the mode of the run it continues), and `select_run` starts from
it. Rank 0 makes every decision that touches the file system and broadcasts it, so all ranks agree; each rank then
reads the checkpoint itself.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from ganforge import checkpoint, dist
from ganforge.checkpoint.store import InvalidCheckpoint, read_manifest
from ganforge.config import Config
from ganforge.errors import UserError
from ganforge.interop.pretrained import PretrainedFacts, describe, from_checkpoint, read_pretrained
from ganforge.presets import PRESETS
from ganforge.train import rundir
from ganforge.train.checkpointing import check_config


@dataclass(frozen=True)
class Source:
    """What a run starts from: `kind` "continue" (the run folder `path`, whose config.json is `config`), "checkpoint"
    (a checkpoint folder), "weights" (pretrained files: one network file, or "G.safetensors,D.safetensors";
    `pretrained` says what they hold) or "fresh" (`path` None). `why`: why this run is continued, or for a new run
    a note on a run it does not continue ("" when there is nothing to say)."""

    kind: str
    path: str | None = None
    config: dict | None = None
    why: str = ""
    pretrained: PretrainedFacts | None = None


@dataclass(frozen=True)
class Found:
    """What the file system holds for a command: the source --resume names ("fresh" for auto and new) and the runs of
    OUTDIR that it may continue (rundir.matching_runs)."""

    named: Source
    runs: tuple[rundir.RunFolder, ...] = ()


def find_sources(key: rundir.RunKey) -> Found:
    """What a run of this key may start from (rank 0 looks, every rank gets the answer); a UserError on every rank
    when --resume names nothing usable."""
    found = dist.broadcast_object(_look(key) if dist.is_main() else None)
    if isinstance(found, str):
        raise UserError(found)
    return found


def choose_source(cfg: Config, found: Found) -> Source:
    """What the resolved `cfg` starts from: the run folder --resume names; else the run of OUTDIR that the rule
    chooses (rundir.choose_run, which refuses a damaged config.json that may be the run's); else what --resume names
    (a checkpoint, weights, or nothing), with a note on a run of the same data and --cfg left alone because it
    trained other maths. Looks at nothing: the same answer on every rank."""
    if found.named.kind == "continue":
        return found.named
    runs = list(found.runs)
    chosen = rundir.choose_run(cfg, runs)
    if chosen is not None:
        return Source("continue", chosen.path, chosen.config, chosen.why)
    return dataclasses.replace(found.named, why=rundir.other_maths_note(cfg, runs))


def _look(key: rundir.RunKey) -> Found | str:
    """What the file system holds, or the problem's message."""
    named = Source("fresh") if key.resume in ("auto", "new") else _named(key.resume, key.data_name)
    if isinstance(named, str):
        return named
    return Found(named, () if named.kind == "continue" else tuple(rundir.matching_runs(key)))


def _named(resume: str, data_name: str) -> Source | str:
    """What --resume PATH names, or the problem's message. A run or checkpoint of another dataset than --data's
    (`data_name`; "" when --data could not be read) is a fine-tuning start from its networks."""
    paths = [Path(p) for p in resume.split(",")]
    if len(paths) == 1 and paths[0].is_dir():
        if (paths[0] / "config.json").exists() or (paths[0] / "checkpoints").is_dir():
            return _run_folder(paths[0], data_name)
        return _checkpoint_folder(paths[0], data_name)
    if len(paths) <= 2 and all(p.is_file() for p in paths):
        return _weights(resume, paths)
    return (
        f"--resume {resume}: not a run folder, a checkpoint folder (ckpt-*), a pretrained network file (an NVlabs "
        ".pkl, a rosinality .pt, a ganforge snapshot) or a snapshot and a discriminator file "
        "(G.safetensors,D.safetensors); pass one, or 'auto' / 'new'"
    )


def _weights(resume: str, paths: list[Path]) -> Source | str:
    try:  # read whole here (a damaged or hostile file is refused before a run folder is made for it)
        return Source("weights", resume, pretrained=describe(read_pretrained(paths)))
    except UserError as error:
        return error.problems[0]


def _run_folder(path: Path, data_name: str) -> Source | str:
    """--resume RUNDIR: that run, continued in place; a run of another dataset: a fine-tuning start from its newest
    checkpoint."""
    config, problem = rundir.read_config(path)
    if problem is not None:
        return f"--resume {path}: its config.json {problem}; restore it, or pass one of its checkpoints (ckpt-*)"
    if not data_name or config["data"].get("name") == data_name:
        return Source("continue", str(path), config, "the run --resume names")
    return _weights(str(path), [path])


def _checkpoint_folder(path: Path, data_name: str) -> Source | str:
    """--resume CKPT: a run continued from that checkpoint; one of another dataset: a fine-tuning start from it.
    A checkpoint that does not verify is left to the start, which refuses it naming why."""
    try:
        trained = checkpoint.read_trained(path)
    except (InvalidCheckpoint, OSError):
        return Source("checkpoint", str(path))
    if not data_name or trained.fields["data.name"] == data_name:
        return Source("checkpoint", str(path))
    return Source("weights", str(path), pretrained=describe(from_checkpoint(trained)))


def describe_start(cfg: Config, source: Source | None) -> list[str]:
    """What a run of `cfg` would do, for --dry-run: "would continue RUN from CKPT at K kimg (why)" or "would start
    RUN[ from ...]" (with the note on a run left alone, and what pretrained files give). Reads only manifests: the
    checkpoint a run continues is loaded and checked by `check_start`."""
    if source is not None and source.kind == "continue":
        newest = _newest_progress(Path(source.path) / "checkpoints")
        at = f" from {newest[0]} at {newest[1] / 1000:g} kimg" if newest else " (no readable checkpoint: it would stop)"
        return [f"would continue {source.path}{at} ({source.why})"]
    line = f"would start {rundir.next_run(cfg)}"
    if source is not None and source.kind in ("checkpoint", "weights"):
        line += f" from {'checkpoint' if source.kind == 'checkpoint' else 'the weights of'} {source.path}"
    lines = [line + (f"; {source.why}" if source is not None and source.why else "")]
    return lines + (pretrained_lines(cfg, source) if source is not None and source.kind == "weights" else [])


def pretrained_lines(cfg: Config, source: Source) -> list[str]:
    """What a run takes from pretrained files (weights, architecture, ADA's p) and what starts fresh."""
    facts, m = source.pretrained, cfg.model
    files = "; ".join(f"{kind}, sha256 {digest[:12]}" for kind, digest in zip(facts.formats, facts.sha256, strict=True))
    copied = " (G from its G_ema)" if "G" not in facts.held else ""
    copied += " (G_ema from its G)" if "G_ema" not in facts.held else ""
    lines = [
        f"from {source.path} ({files}): the weights of {', '.join(n for n in facts.held)}{copied}",
        f"from {source.path}: the architecture, {m.generator}, channel base {m.channel_base}, max {m.channel_max}, "
        f"mapping {m.mapping_layers} layers, z {m.z_dim}, w {m.w_dim}{_fp16_note(cfg, facts)}",
    ]
    if facts.augment_p is not None:
        if cfg.augment.mode == "ada":
            lines.append(f"ADA's p starts at {facts.augment_p:.4g}, where the source left it")
        else:
            lines.append(f"the source's ADA p {facts.augment_p:.4g} is not used (--aug {cfg.augment.mode})")
    fresh = ([] if "D" in facts.held else ["D"]) + ["optimisers", "progress (kimg 0)"]
    return lines + [
        _fine_tuning_schedule(cfg),
        f"starting fresh: {', '.join(fresh)}; the rest from --cfg {cfg.preset} and the flags",
    ]


def _fine_tuning_schedule(cfg: Config) -> str:
    """What a start from a trained network changes in the from-scratch schedules, as the released setups do."""
    parts = ["G_ema averages from the file's weights without a ramp-up"]
    if cfg.augment.mode == "ada":
        parts.append(f"ADA moves p from 0 to 1 in {cfg.augment.ada_kimg:g} kimg")
    if PRESETS[cfg.preset].blur_sigma:
        parts.append("no blurred-D warm-up")
    return "as a fine-tuning start: " + "; ".join(parts)


def _fp16_note(cfg: Config, facts: PretrainedFacts) -> str:
    source_res, p = facts.g_arch.get("num_fp16_res", 0), cfg.precision
    if not source_res:
        return ""
    if p.mode == "fp16" and p.fp16_res:
        return f"; fp16 in the top {p.fp16_res} resolutions, clamp {p.conv_clamp}"
    return f" (its fp16 in the top {source_res} resolutions applies under --precision fp16 only)"


def _newest_progress(ckpt_dir: Path) -> tuple[str, int] | None:
    """(name, images trained) of the newest checkpoint whose manifest reads, or None."""
    for path in reversed(checkpoint.list_checkpoints(ckpt_dir)):
        try:
            return path.name, read_manifest(path)["nimg"]
        except (InvalidCheckpoint, OSError):
            continue
    return None


def _load(kind: str, path: str) -> tuple[Path | None, dict | None]:
    """(checkpoint folder, its state), or (None, None) when not resuming from a checkpoint."""
    if kind == "continue":
        found = checkpoint.find_latest(Path(path) / "checkpoints")
        if found is None:
            raise UserError(
                f"--resume: no valid checkpoint in {path}/checkpoints (see the warnings above); pass "
                "--resume new to start a new run, or --resume PATH with a checkpoint to use"
            )
        return found
    if kind == "checkpoint":
        return Path(path), checkpoint.load(Path(path))
    return None, None


def check_start(cfg: Config, found: Source) -> tuple[Path | None, dict | None, list[str]]:
    """Load the checkpoint a run continues from and check it against `cfg` as the run does (`--dry-run` too): ->
    (checkpoint folder, its state, the differences --allow-config-change lets through); (None, None, []) when the
    run starts from no checkpoint. A UserError when the run would be refused."""
    source, state = _load(found.kind, found.path)
    return source, state, [] if state is None else check_config(state, cfg, source)


def select_run(cfg: Config, device: torch.device, found: Source) -> tuple[Path, dict | None, list[Path]]:
    """-> (run directory, checkpoint state or None, weight files to start from: a snapshot and/or a discriminator
    file), from what `find_source` found. Collective."""
    kind, path = found.kind, found.path
    source, state, notes = check_start(cfg, found)
    run_dir = None
    if dist.is_main():
        run_dir = Path(path) if kind == "continue" else rundir.create_run(cfg)
        rundir.write_config(run_dir, cfg)
        rundir.write_env(run_dir, device)
        _explain(cfg, found, source or path, state, notes, run_dir)
    run_dir = Path(dist.broadcast_object(str(run_dir) if run_dir else None))
    return run_dir, state, [Path(p) for p in path.split(",")] if kind == "weights" else []


def _explain(cfg: Config, found: Source, path, state: dict | None, notes: list[str], run_dir: Path) -> None:
    """Say on the terminal what is being resumed from, and why, before the loop starts."""
    kind, why = found.kind, f" ({found.why})" if found.kind == "continue" and found.why else ""
    if state is not None:
        dist.print0(f"resuming {run_dir} from {path} at {state['loop']['cur_nimg'] / 1000:g} kimg{why}")
    if kind != "continue" and found.why:
        dist.print0(f"new run {run_dir}: {found.why}")
    if kind == "weights":
        for line in pretrained_lines(cfg, found):
            dist.print0(line)
    for line in allowed_changes(notes):
        dist.print0(line)


def allowed_changes(notes: list[str]) -> list[str]:
    return [f"config change allowed by --allow-config-change: {note}" for note in notes]

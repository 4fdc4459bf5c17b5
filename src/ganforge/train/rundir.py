"""The run directory `OUTDIR/NNNNN-<dataset>-<cfg>-gpusG-batchB/` and the rule that finds it again on resume.

Rule (so that rerunning a command continues that command's run): among the runs in OUTDIR that hold a checkpoint and
were trained on the same --data with the same --cfg (under `--resume PATH`: and were started from PATH), continue the
newest whose recorded configuration (config.json: every option as the command that last ran it resolved them) equals
this command's (both as recorded: a URL without its credentials and signature, so the URL signed afresh is the
same); otherwise the newest with the same training maths (another --kimg, --tick, monitor or speed
option), saying what differed; otherwise start a new run (from PATH under `--resume PATH`), naming a run of the same
data and --cfg that trained other maths and how to continue it (`--allow-config-change` continues the newest of them
whose networks have the same shapes: not one of another --cbase, say).
`--resume new` always starts a new run; `--resume RUNDIR` continues that run folder in place.

A new run goes into a new folder numbered one above the highest, except where the newest folder of the same command
never reached its first checkpoint (killed or failed during start-up): holding no training, that folder is reused,
so retrying a command that failed early does not leave a trail of empty runs.
"""

import contextlib
import dataclasses
import json
import os
import platform
import re
import stat
import subprocess
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from ganforge import __version__
from ganforge.config import AUTO_PRECISION, SHAPE_FIELDS, Config, field_changes, flatten, upgrade
from ganforge.data.check import label_summary
from ganforge.durable import WriteError, append_text, replace_file
from ganforge.errors import UserError
from ganforge.train.options import TRAIN_OPTIONS
from ganforge.urls import public_text, public_url, public_value

_RUN_NAME = re.compile(r"^(\d{5})-")
_CONFIG_MAX_BYTES = 2**20  # a run's config.json is a few KB


class RunFolderWarning(UserWarning):
    """A run folder in OUTDIR was left out of the choice of the run to continue (its config.json cannot be used)."""


def describe(cfg: Config) -> str:
    return f"{cfg.data.name}-{cfg.preset}-gpus{cfg.world_size}-batch{cfg.schedule.batch}"


def _runs(outdir: Path) -> list[Path]:
    """Run folders in OUTDIR, oldest first by their number."""
    if not outdir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in outdir.iterdir() if p.is_dir() and (m := _RUN_NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def read_config(run: Path) -> tuple[dict | None, str | None]:
    """(a run's config.json in today's layout, None), or (None, what is wrong with it: a phrase that follows
    "config.json"). Older runs stay readable."""
    try:  # opened without blocking and checked on the descriptor: a FIFO in its place must not stall train
        with os.fdopen(os.open(run / "config.json", os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > _CONFIG_MAX_BYTES:
                return None, f"is not a regular file of at most {_CONFIG_MAX_BYTES} bytes"
            config = json.loads(file.read(_CONFIG_MAX_BYTES).decode("utf-8"))
    except OSError as error:
        return None, f"cannot be read ({error.strerror or type(error).__name__})"
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        what = "nested too deeply" if isinstance(error, RecursionError) else str(error)[:120]
        return None, f"is not JSON ({what})"
    if not (isinstance(config, dict) and _fields_ok(upgrade(config))):
        return None, "is not a run's configuration (it needs data.path, preset and run.resume, each a string)"
    return public_value(upgrade(config)), None  # as this command's is compared: older runs recorded URLs whole


def _fields_ok(config: dict) -> bool:
    """Does a parsed config.json hold what choosing the run to continue reads, with the right types?"""
    data, run = config.get("data"), config.get("run")
    return (
        isinstance(data, dict)
        and isinstance(data.get("path"), str)
        and isinstance(config.get("preset"), str)
        and isinstance(run, dict)
        and isinstance(run.get("resume"), str)
    )


def absolute(path: str) -> str:
    """A path as the run records it: absolute, so that the same folder written two ways (`runs`, `./runs`,
    `/home/me/runs`) is one value, and a run is found again from any working directory."""
    return str(Path(path).resolve())


def absolute_resume(resume: str) -> str:
    """--resume as the run records it: `auto` and `new` as they are, each path of PATH[,PATH] absolute. A run
    recorded before the paths were made absolute is read from the working directory, where its command ran."""
    return resume if resume in ("auto", "new") else ",".join(absolute(part) for part in resume.split(","))


def _has_checkpoint(run: Path) -> bool:
    ckpt = run / "checkpoints"
    return ckpt.is_dir() and any(p.name.startswith("ckpt-") for p in ckpt.iterdir())


@dataclass(frozen=True)
class RunKey:
    """What identifies the run a command continues: known from the options and the dataset before the rest of the
    configuration is resolved (`resolver.observe` looks for the run then)."""

    outdir: str
    data_path: str
    data_name: str
    preset: str
    resume: str

    @classmethod
    def of(cls, cfg: Config) -> "RunKey":
        return cls(cfg.run.outdir, cfg.data.path, cfg.data.name, cfg.preset, cfg.run.resume)


@dataclass(frozen=True)
class RunFolder:
    """A checkpointed run of OUTDIR that this command may continue: its folder and config.json (today's layout),
    or, for one whose config.json cannot be used, what is wrong with it (`problem`)."""

    path: str
    config: dict | None
    problem: str | None = None


def matching_runs(key: RunKey) -> list[RunFolder]:
    """The checkpointed runs this command may continue, newest first: trained on the same --data with the same
    --cfg and, under --resume PATH, started from PATH; none under --resume new (`choose_run` picks one).

    A run folder whose config.json cannot be used (truncated, not a configuration) is left out with a warning when
    its name shows another dataset or --cfg. When its name matches this command it may be the very run to continue,
    and leaving it out could silently start over: it is listed with its problem, for `choose_run` to refuse.
    """
    if key.resume == "new":
        return []
    found = []
    for run in reversed(_runs(Path(key.outdir))):
        if not _has_checkpoint(run):
            continue
        old, problem = read_config(run)
        if problem is not None:
            if _named_like(run, key):
                found.append(RunFolder(str(run), None, problem))
            else:
                warnings.warn(f"skipping run folder {run}: config.json {problem}", RunFolderWarning, stacklevel=2)
            continue
        same_data = old["data"]["path"] == public_url(key.data_path) and old["preset"] == key.preset
        if same_data and (key.resume == "auto" or absolute_resume(old["run"]["resume"]) == key.resume):
            found.append(RunFolder(str(run), old))
    return found


def _named_like(run: Path, key: RunKey) -> bool:
    """Does the folder's name say it is a run of this dataset and --cfg (as `describe` names it)?"""
    return run.name[len("NNNNN-") :].startswith(f"{key.data_name}-{key.preset}-gpus")


@dataclass(frozen=True)
class Choice:
    """The run a command continues, and why that one (said at the start and by --dry-run)."""

    path: str
    config: dict
    why: str


def choose_run(cfg: Config, runs: list[RunFolder]) -> Choice | None:
    """The run `cfg` continues, by the rule above, among `matching_runs` (newest first); None: a new run. A run
    folder with a damaged config.json met before the choice is refused (UserError): it may be the one to continue.

    `cfg` may still have --precision auto unresolved (its mode "auto") or resolved (an auto_reason): either way each
    run is compared as if auto had kept that run's mode, which is what continuing it would do."""
    for run in runs:
        if run.problem is not None:
            raise UserError(
                f"{Path(run.path) / 'config.json'}: {run.problem}; this run of the same dataset and --cfg may be the "
                "one to continue: restore the file, or pass --resume new to start a new run"
            )
        if not command_changes(run.config, cfg):
            return Choice(run.path, run.config, "same command")
    for run in runs:
        if not _maths_changes(run, cfg):
            changed = describe_changes(command_changes(run.config, cfg))
            return Choice(run.path, run.config, f"same training maths and data; its last command differed in {changed}")
    same_shapes = [run for run in runs if _same_shapes(run, cfg)]
    if same_shapes and cfg.run.allow_config_change:
        run = same_shapes[0]
        changed = describe_changes(_maths_changes(run, cfg))
        return Choice(run.path, run.config, f"newest of this data and --cfg, --allow-config-change: {changed}")
    return None


def _maths_changes(run: RunFolder, cfg: Config) -> list[tuple[str, object, object]]:
    return field_changes(run.config, _as_continuing(cfg, run.config).to_dict())


def _same_shapes(run: RunFolder, cfg: Config) -> bool:
    """Could `cfg` load the run's networks at all (no --allow-config-change changes a tensor's shape)?"""
    return not any(path in SHAPE_FIELDS for path, _, _ in _maths_changes(run, cfg))


def other_maths_note(cfg: Config, runs: list[RunFolder]) -> str:
    """For a new run: the newest run of the same data and --cfg that it does not continue because its training maths
    differ, and how to continue that one instead ("" when there is none whose networks this command could load)."""
    same_shapes = [run for run in runs if _same_shapes(run, cfg)]
    if not same_shapes:
        return ""
    run = same_shapes[0]
    changed = describe_changes(_maths_changes(run, cfg))
    return (
        f"{run.path} trained the same data and --cfg with other maths ({changed}); to continue it with these values, "
        f"pass --resume {run.path} --allow-config-change"
    )


# Values a run records that explain other values rather than being asked for: why --precision auto chose its mode,
# and which typed lengths were rounded up to whole batches.
_EXPLANATIONS = ("precision.auto_reason", "schedule.rounded")


def command_changes(old: dict, cfg: Config) -> list[tuple[str, object, object]]:
    """What differs between a run's recorded configuration (the resolved options of the command that last ran it)
    and `cfg`'s: every field but the explanations, and whether --precision was left to auto. --outdir is not
    compared: every run compared lies in this command's OUTDIR, however either command spelled it; --resume is
    compared as absolute paths."""
    mine = _as_continuing(cfg, old)
    old = {**old, "run": {**old["run"], "outdir": cfg.run.outdir, "resume": absolute_resume(old["run"]["resume"])}}
    changes = field_changes(old, mine.to_dict(), keep=lambda path: path not in _EXPLANATIONS)
    was_auto = bool(flatten(upgrade(old)).get("precision.auto_reason"))
    is_auto = bool(mine.precision.auto_reason) or cfg.precision.mode == AUTO_PRECISION
    if was_auto != is_auto:
        changes.append(("precision.mode", "auto" if was_auto else "given", "auto" if is_auto else "given"))
    return changes


def _as_continuing(cfg: Config, old: dict) -> Config:
    """`cfg` with --precision auto's choice as continuing the run of config `old` makes it: that run's mode."""
    p = cfg.precision
    mode = flatten(upgrade(old)).get("precision.mode")
    if (p.mode != AUTO_PRECISION and not p.auto_reason) or not isinstance(mode, str):
        return cfg
    return dataclasses.replace(cfg, precision=dataclasses.replace(p, mode=mode))


def describe_changes(changes: list[tuple[str, object, object]], shown: int = 4) -> str:
    """`--kimg 0.32 (now 0.64), --gamma 10 (now 2)`: the run's value, then this command's (the flag where an option
    sets the field, else its dotted name), at most `shown` of them."""
    flags = {d.path: d.flag for d in TRAIN_OPTIONS if d.field is not None}
    parts = [f"{flags.get(path, path)} {_shown(a)} (now {_shown(b)})" for path, a, b in changes[:shown]]
    more = f" and {len(changes) - shown} more" if len(changes) > shown else ""
    return ", ".join(parts) + more


def _shown(value) -> str:
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def find_unstarted_run(cfg: Config) -> Path | None:
    """The newest run folder in OUTDIR if the same command made it and it never reached a checkpoint, else None."""
    runs = _runs(Path(cfg.run.outdir))
    if not runs or _has_checkpoint(runs[-1]) or not runs[-1].name.endswith(f"-{describe(cfg)}"):
        return None
    return runs[-1] if read_config(runs[-1])[0] == json.loads(cfg.to_json()) else None


def next_run(cfg: Config) -> Path:
    """The folder `create_run` would make or reuse now (made by neither: for --dry-run)."""
    unstarted = find_unstarted_run(cfg)
    outdir = Path(cfg.run.outdir)
    return unstarted or outdir / f"{_next_number(outdir):05d}-{describe(cfg)}"


def _next_number(outdir: Path) -> int:
    runs = _runs(outdir)
    return int(_RUN_NAME.match(runs[-1].name).group(1)) + 1 if runs else 0


def create_run(cfg: Config) -> Path:
    """The folder a new run writes to: an unstarted one of the same command, or a new one one above the highest."""
    unstarted = find_unstarted_run(cfg)
    if unstarted is not None:
        return unstarted
    outdir = Path(cfg.run.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    number = _next_number(outdir)
    while True:
        path = outdir / f"{number:05d}-{describe(cfg)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:  # another run started at the same moment took this number
            number += 1


def record_failure(run: Path, error: BaseException) -> None:
    """Append why the run stopped to its log.txt: a user error's lines as printed, anything else with its traceback.
    Best effort: a log that cannot be written (the disk that stopped the run is full) must not hide the error."""
    if isinstance(error, UserError):
        text = "".join(f"error: {problem}\n" for problem in error.problems)
    elif isinstance(error, KeyboardInterrupt):
        text = "interrupted\n"
    else:
        text = "".join(traceback.format_exception(error))
    with contextlib.suppress(WriteError):
        append_text(run / "log.txt", public_text(text))


def write_config(run: Path, cfg: Config) -> None:
    replace_file(run / "config.json", (cfg.to_json() + "\n").encode())


def environment(device: torch.device) -> dict:
    """Versions, devices and source revision: what `env.json` records for reproducing a run."""
    cuda = torch.cuda.is_available()
    return {
        "ganforge": __version__,
        "git_commit": _git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "device": str(device),
        "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }


def write_env(run: Path, device: torch.device) -> None:
    replace_file(run / "env.json", (json.dumps(environment(device), indent=2) + "\n").encode())


def write_labels(run: Path, dataset) -> None:
    """labels.json: the label distribution of the data the run trains on (ganforge.data.distribution's JSON), which
    `ganforge report` shows. It counts the images as stored, without --mirror's copies; a run without --cond records
    its data's labels too (the report says the run does not use them). Reads labels only, never an image."""
    replace_file(run / "labels.json", (json.dumps(label_summary(dataset), indent=2) + "\n").encode())


def _git_commit() -> str | None:
    """The commit of the ganforge source tree when it is a git checkout (editable install), else None."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None

"""The run directory `OUTDIR/NNNNN-<dataset>-<cfg>-gpusG-batchB/` and the rule that finds it again on resume.

Rule (so that rerunning the same command resumes): `--resume auto` continues the newest run in OUTDIR trained on the
same --data with the same --cfg that holds a checkpoint; `--resume PATH` does the same if that run was itself started
from PATH, and otherwise starts a new run from PATH; `--resume new` always starts a new run.

A new run goes into a new folder numbered one above the highest, except where the newest folder of the same command
never reached its first checkpoint (killed or failed during start-up): holding no training, that folder is reused,
so retrying a command that failed early does not leave a trail of empty runs.
"""

import contextlib
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
from ganforge.config import Config, upgrade
from ganforge.durable import WriteError, append_text, replace_file
from ganforge.errors import UserError

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


def _read_config(run: Path) -> tuple[dict | None, str | None]:
    """(a run's config.json in today's layout, None), or (None, what is wrong with it). Older runs stay readable."""
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
    return upgrade(config), None


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


def find_run(cfg: Config | RunKey) -> Path | None:
    """The run to continue by the rule above, or None.

    A run folder whose config.json cannot be used (truncated, not a configuration) is skipped with a warning when its
    name shows another dataset or --cfg. When its name matches this command it may be the very run to continue, and
    skipping it would silently start over: that is a UserError naming the file (restore it, or pass --resume new).
    """
    key = cfg if isinstance(cfg, RunKey) else RunKey.of(cfg)
    if key.resume == "new":
        return None
    for run in reversed(_runs(Path(key.outdir))):
        if not _has_checkpoint(run):
            continue
        old, problem = _read_config(run)
        if problem is not None:
            _unreadable(run, problem, key)
            continue
        if old["data"]["path"] != key.data_path or old["preset"] != key.preset:
            continue
        if key.resume == "auto" or old["run"]["resume"] == key.resume:
            return run
    return None


def run_config(run: Path) -> dict:
    """The config.json of a run `find_run` chose (it was read and checked there)."""
    config, problem = _read_config(run)
    assert problem is None, (run, problem)
    return config


def _unreadable(run: Path, problem: str, key: RunKey) -> None:
    """Refuse (UserError) or skip with a warning a checkpointed run folder whose config.json cannot be used."""
    path = run / "config.json"
    if run.name[len("NNNNN-") :].startswith(f"{key.data_name}-{key.preset}-gpus"):  # as `describe` names it
        raise UserError(
            f"{path}: {problem}; this run of the same dataset and --cfg may be the one to continue: restore the "
            "file, or pass --resume new to start a new run"
        )
    warnings.warn(f"skipping run folder {run}: config.json {problem}", RunFolderWarning, stacklevel=3)


def find_unstarted_run(cfg: Config) -> Path | None:
    """The newest run folder in OUTDIR if the same command made it and it never reached a checkpoint, else None."""
    runs = _runs(Path(cfg.run.outdir))
    if not runs or _has_checkpoint(runs[-1]) or not runs[-1].name.endswith(f"-{describe(cfg)}"):
        return None
    return runs[-1] if _read_config(runs[-1])[0] == json.loads(cfg.to_json()) else None


def create_run(cfg: Config) -> Path:
    """The folder a new run writes to: an unstarted one of the same command, or a new one one above the highest."""
    unstarted = find_unstarted_run(cfg)
    if unstarted is not None:
        return unstarted
    outdir = Path(cfg.run.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    runs = _runs(outdir)
    number = int(_RUN_NAME.match(runs[-1].name).group(1)) + 1 if runs else 0
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
        append_text(run / "log.txt", text)


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


def _git_commit() -> str | None:
    """The commit of the ganforge source tree when it is a git checkout (editable install), else None."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None

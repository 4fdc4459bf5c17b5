"""A run folder that ganforge wrote before each option had one declaration (commit 8cafc98; fixtures/README.md says
how it was made) is verified, resumed and restored bit for bit by today's code.

Nothing here compares with numbers computed on this machine: restoring and capturing again does no arithmetic, so the
comparison holds on any CPU, while a training step's floats may differ between CPUs.
"""

import dataclasses
import json
import tarfile
from pathlib import Path

import torch
from checkpoint_helpers import assert_same
from click.testing import CliRunner
from safetensors.torch import load_file

from ganforge import checkpoint
from ganforge.checkpoint import serialize
from ganforge.cli import main as cli_main
from ganforge.config import maths_differences
from ganforge.data import open_dataset
from ganforge.data.source import DataSource
from ganforge.train.build import build
from ganforge.train.checkpointing import capture, restore
from ganforge.train.command import run as train
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import resolve_run

FIXTURE = Path(__file__).parent / "fixtures" / "run-8cafc98.tar.gz"
RUN = "00000-data-tiny-gpus1-batch8"
CKPT = "ckpt-000000072"
# The networks' widths the fixture's run set on its Config (no option sets them; the tiny preset's are 8 times wider).
WIDTHS = {"channel_max": 8, "z_dim": 8, "w_dim": 8}


def _unpack(root: Path) -> tuple[Path, Path]:
    """(dataset, run folder) of the fixture, unpacked under `root`."""
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root, filter="data")
    return root / "data", root / RUN


def _resolved(data: Path, run_dir: Path, kimg: float):
    """(Config, start) of today's code for the fixture's command continuing its run folder to `kimg`."""
    options = TrainOptions(
        data=str(data),
        outdir=str(run_dir.parent),
        preset="tiny",
        kimg=kimg,
        batch=8,
        tick=0.008,
        snap=1,
        workers=0,
        device="cpu",
        precision="fp32",
        aug="ada",
        ada_interval=2,
        ada_kimg=0.1,
        target=0.05,
        dlr=0.03,
        no_report=True,
        resume=str(run_dir),
    )
    config, source = resolve_run(options)
    return dataclasses.replace(config, model=dataclasses.replace(config.model, **WIDTHS)), source


def test_verify_accepts_the_old_checkpoint(tmp_path):
    _, run_dir = _unpack(tmp_path)
    result = CliRunner().invoke(cli_main, ["checkpoint", "verify", str(run_dir / "checkpoints" / CKPT)])
    assert result.exit_code == 0, result.output
    assert "ok:" in result.output and "(0.072 kimg)" in result.output


def test_the_old_run_folder_resumes(tmp_path):
    data, run_dir = _unpack(tmp_path)
    config, source = _resolved(data, run_dir, kimg=0.08)
    assert (source.kind, source.path) == ("continue", str(run_dir))
    assert train(config, source) == 0
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("ckpt-*")) == [CKPT, "ckpt-000000080"]
    assert "resuming at 0.072 kimg" in (run_dir / "log.txt").read_text()
    assert checkpoint.read(run_dir / "checkpoints" / "ckpt-000000080")["loop"]["cur_nimg"] == 80


def test_the_old_state_is_restored_bit_for_bit(tmp_path):
    """Restored into today's networks, optimisers, ADA and RNGs and captured again, the state is the files' own: every
    tensor bit for bit, every other value equal, and the config (in its old layout) the same maths."""
    data, run_dir = _unpack(tmp_path)
    ckpt = run_dir / "checkpoints" / CKPT
    config, _ = _resolved(data, run_dir, kimg=0.08)
    trainer, _, G_ema = build(config, torch.device("cpu"))
    source = DataSource(open_dataset(data), 1)
    captured = capture(trainer, G_ema, restore(checkpoint.read(ckpt), trainer, G_ema, source), source)

    held = json.loads((ckpt / "state.json").read_text())["state"]
    assert maths_differences(held.pop("config"), config.to_dict()) == []
    assert held["rng"]["cuda"] == []  # written on a CPU; a machine with CUDA captures its own devices' states too
    del held["rng"]["python"], held["rng"]["numpy"]  # format 2 held them; training draws nothing from them
    captured["rng"]["cuda"] = []
    assert captured["loop"].pop("intra_op_threads") == torch.get_num_threads()  # format 4 added it
    for name in ("opt_G", "opt_D"):  # how Adam runs is this ganforge's choice: fused since the step skips on the device
        assert [group["fused"] for group in held[name]["param_groups"]] == [None]
        held[name]["param_groups"][0]["fused"] = True
    skeleton, tensors = serialize.flatten(captured)
    del held["config_hash"], skeleton["config"], skeleton["config_hash"]
    assert skeleton == held
    file_tensors = load_file(ckpt / "tensors.safetensors")
    assert_same(dict(sorted(tensors.items())), dict(sorted(file_tensors.items())), "tensors")

"""Shared helpers for the checkpoint tests: a small state shaped like a training state (for the storage layer), a
bitwise comparison, and real checkpoints of a tiny training run with edits that keep their manifest valid."""

import hashlib
import json
from pathlib import Path

import torch
from click.testing import CliRunner

from ganforge import checkpoint
from ganforge.cli import main as cli_main
from launch_helpers import tiny_archive


def train_a_little(seed: int = 0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LeakyReLU(0.2), torch.nn.Linear(8, 1))
    net.register_buffer("w_avg", torch.randn(8))
    opt = torch.optim.Adam(net.parameters(), lr=0.002, betas=(0.0, 0.99), eps=1e-8)
    for _ in range(3):
        opt.zero_grad()
        net(torch.randn(5, 4)).square().mean().backward()
        opt.step()
    return net, opt


def make_state(nimg: int = 1000) -> dict:
    """The shape of what the training loop saves: module and Adam state dicts, scaler, RNG, counters. Not a state a
    resume accepts (its networks are no GAN): load it with `check_state=False`."""
    G, opt_G = train_a_little(0)
    D, opt_D = train_a_little(1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    return {
        "G": G.state_dict(),
        "D": D.state_dict(),
        "G_ema": {k: v.clone() for k, v in G.state_dict().items()},
        "opt_G": opt_G.state_dict(),
        "opt_D": opt_D.state_dict(),
        "scaler_G": scaler.state_dict(),
        "scaler_D": {},
        "rng": checkpoint.capture_rng(),
        "sampler": {"position": nimg},
        "augment": {"p": torch.tensor(0.125), "accumulated": [torch.zeros(2, dtype=torch.float64), 17]},
        "loop": {"cur_nimg": nimg, "cur_tick": 3, "pl_mean": torch.tensor(0.0), "lr": 0.0025, "done": False},
        "config_hash": "0123abcd",
        "config": {"cfg": "tiny", "gamma": 0.5, "seed": None, "betas": (0.0, 0.99)},
    }


def _bytes(tensor: torch.Tensor) -> bytes:
    return tensor.contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def assert_same(a, b, where: str = "state") -> None:
    """Equal structure, Python types and dict keys (with their types), and tensors equal bit for bit."""
    # state_dict() returns OrderedDicts; a checkpoint gives plain dicts in the same order, which load the same.
    kind_a, kind_b = (dict if isinstance(x, dict) else type(x) for x in (a, b))
    assert kind_a is kind_b, f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"{where}: {a.dtype}{list(a.shape)} != {b.dtype}{list(b.shape)}"
        )
        assert (
            a.contiguous().view(-1).view(torch.uint8).tolist() == b.contiguous().view(-1).view(torch.uint8).tolist()
        ), where
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and a != a:
        assert b != b, where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# ---- real checkpoints: a tiny training run, and edits that keep the manifest valid --------------------------------

TINY_TRAIN = ("--cfg", "tiny", "--batch", "8", "--tick", "0.008", "--snap", "1", "--workers", "0", "--device", "cpu",
              "--aug", "ada", "--no-report")  # fmt: skip


def train_args(data: Path, outdir: Path, kimg: float, *extra: str) -> list[str]:
    """`ganforge train` arguments of the tiny run (8x8 RGB, batch 8, ADA so that augment state is stored)."""
    return ["train", "--data", str(data), "--outdir", str(outdir), "--kimg", f"{kimg:g}", *TINY_TRAIN, *extra]


def train_tiny(root: Path, kimg: float = 0.008) -> tuple[Path, Path]:
    """(dataset, run folder) of a tiny run in-process, with a checkpoint every 8 images (ckpt-000000000, ...)."""
    data = tiny_archive(root)
    result = CliRunner().invoke(cli_main, train_args(data, root / "runs", kimg))
    assert result.exit_code == 0, result.output
    (run,) = (root / "runs").iterdir()
    return data, run


def rehash(path: Path) -> None:
    """Re-sign the manifest with the files' SHA-256 and sizes, as an attacker who edits a file would, so that the
    edit reaches the parsers behind the integrity check."""
    manifest = json.loads((path / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        data = (path / name).read_bytes()
        entry.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    (path / "manifest.json").write_text(json.dumps(manifest))


def resave(state: dict, folder: Path, nimg: int) -> Path:
    """Write `state` (a real one, edited) as checkpoint folder `folder/ckpt-<nimg>`, signed by its manifest."""
    return checkpoint.save(folder, state, tag=str(nimg), retention=checkpoint.Retention(keep_last=100))


def rehash_config(state: dict) -> None:
    """Make `config_hash` the SHA-256 of the (edited) stored config again, as `config_hash` computes it."""
    state["config_hash"] = hashlib.sha256(json.dumps(state["config"], sort_keys=True).encode()).hexdigest()

"""What a `--network` may name, for every command that takes one: a network file (a ganforge snapshot, an NVlabs
pickle, an R3GAN pickle, a rosinality checkpoint), a run folder of `ganforge train` (its newest snapshot, or where it
has none yet, the G_ema of its newest checkpoint that verifies) or a checkpoint folder (its G_ema). A folder's choice
is said on stderr, so that the user knows which file made the images."""

import sys
from pathlib import Path

from ganforge import checkpoint
from ganforge.errors import UserError
from ganforge.interop.network import load_network_file
from ganforge.interop.pretrained import from_checkpoint

SNAPSHOT_GLOB = "network-snapshot-*.safetensors"  # train/loop.py's names; the kimg is zero-padded, so names sort


def network_file(path: Path) -> Path:
    """The file a --network names: itself, or for a run folder with snapshots its newest one (said on stderr); a
    folder without snapshots is returned as it is (a checkpoint, or a run folder with only checkpoints)."""
    snapshots = sorted((path / "snapshots").glob(SNAPSHOT_GLOB)) if path.is_dir() else []
    if snapshots:
        print(f"--network {path}: its newest snapshot, {snapshots[-1]}", file=sys.stderr)
        return snapshots[-1]
    return path


def load_network(path, which: str = "G_ema", device="cpu"):
    """A generator from what a --network names (see the module): (generator in eval mode on `device`, meta). `which`
    picks G_ema (default) or G in the foreign formats and in checkpoints; a snapshot holds only G_ema."""
    path = network_file(Path(path))
    if not path.is_dir():
        return load_network_file(path, which, device)
    if not ((path / checkpoint.store.MANIFEST).is_file() or (path / "checkpoints").is_dir()):
        raise UserError(
            f"--network {path}: a folder with neither snapshots/{SNAPSHOT_GLOB} nor checkpoints; give a run folder "
            "of `ganforge train`, a checkpoint folder, or a snapshot, .pkl or .pt file"
        )
    trained = checkpoint.load_trained(path)
    print(f"--network {path}: {which} of the checkpoint {trained.path}", file=sys.stderr)
    G = from_checkpoint(trained).networks[which]
    meta = {"imported_from": trained.path.name, "source_format": "ganforge checkpoint", "network": which}
    return G.eval().requires_grad_(False).to(device), meta

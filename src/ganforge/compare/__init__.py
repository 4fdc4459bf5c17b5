"""What differs between two checkpoints, two snapshots, or a snapshot and a checkpoint (`ganforge checkpoint diff`).

Checkpoints are read through `checkpoint.read`, exactly as a resume reads them; snapshots and discriminator files
through `snapshot.read_weights_file`, with every check loading makes. Nothing is built, nothing is executed.

Two snapshots are compared whole: format, architecture, constructor arguments, meta and every tensor. A snapshot
holds the generator a run shares, its G_ema (a discriminator file holds a D), so a snapshot and a checkpoint are
compared as that network: the file's tensors against the checkpoint's G_ema (or D), which answers "was this snapshot
written from that checkpoint?". The file's description (architecture, meta) has no counterpart in a checkpoint.

    from ganforge.compare import compare
    comparison = compare(Path("run-a"), Path("run-b"))  # .differences: what differs, tensor by tensor

The names are loaded on first use: `ganforge --help` imports `ganforge.compare.options` (and so this file), and must
not pay for importing torch.
"""

from ganforge import names_on_first_use

_HOMES = {"Comparison": "ganforge.compare.comparison", "compare": "ganforge.compare.comparison"}

__all__ = list(_HOMES)


__getattr__ = names_on_first_use(__name__, _HOMES)

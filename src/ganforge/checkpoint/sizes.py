"""How many bytes a run's files take on disk, known before they are written (the resolver refuses an --outdir whose
disk cannot hold the first checkpoint and snapshot)."""

import torch


def first_save_bytes(G: torch.nn.Module, D: torch.nn.Module) -> int:
    """About how many bytes the first checkpoint and snapshot take: G, G_ema and D with their buffers, Adam's two
    moments per parameter of G and D, and the snapshot's copy of G_ema, all fp32. Shapes only are read, so networks
    on the meta device do (no memory, no initialisation work)."""

    def size(net: torch.nn.Module, moments: int) -> int:
        params = sum(p.numel() for p in net.parameters())
        return 4 * (params * (1 + moments) + sum(b.numel() for b in net.buffers()))

    return size(G, moments=2) + 2 * size(G, moments=0) + size(D, moments=2)

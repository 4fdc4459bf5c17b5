"""Networks whose samples differ, for the tests of losses, penalties and regularisers.

Such a test compares each sample's term with a slow computation of that sample alone; it can tell a term taken on the
wrong images, the wrong half of a pair or the wrong network only where the samples' values differ. Zero and fix-up
initialisations (R3GAN's last convolution of each residual block, StyleGAN's zero biases) can make every image's
output or input gradient the same, and then any mix of the terms passes. `perturb` moves weights off such starts;
`assert_distinct` checks, before the comparison relies on it, that the samples' values differ.
"""

import torch


@torch.no_grad()
def perturb(module: torch.nn.Module, scale: float = 0.3, seed: int = 0, keep: tuple[str, ...] = ()) -> torch.nn.Module:
    """Add N(0, scale * mean |p|) noise to every floating parameter (N(0, scale) to an all-zero one), but those whose
    name ends with one of `keep`; deterministic in `seed`. Returns `module`."""
    generator = torch.Generator().manual_seed(seed)
    for name, p in module.named_parameters():
        if not p.is_floating_point() or name.endswith(keep):
            continue
        size = p.abs().mean().item() or 1.0
        p.add_(torch.randn(p.shape, generator=generator).to(p) * scale * size)
    return module


def assert_distinct(values: torch.Tensor, what: str, relative: float = 1e-5) -> None:
    """Every two samples of `values` [N, ...] (one per image, pair or latent) differ somewhere by more than `relative`
    of the largest magnitude among them: far more than float32 rounding, which the comparisons tolerate."""
    rows = values.detach().flatten(1) if values.dim() > 1 else values.detach()[:, None]
    scale = rows.abs().max().item()
    assert scale > 0, f"{what}: all zero"
    gaps = (rows[:, None] - rows[None]).abs().amax(-1)  # [N, N]
    gaps += torch.eye(len(rows)) * scale  # a sample is not compared with itself
    assert gaps.min().item() > relative * scale, f"{what}: two samples are the same (within {relative:g}): {rows}"


def adam_gradients(monkeypatch) -> list[list[torch.Tensor]]:
    """From now on in the test, each step of any Adam appends the gradients of its first group's parameters (what the
    step received) to the returned list."""
    received, step = [], torch.optim.Adam.step

    def recording(opt, *args, **kwargs):
        received.append([p.grad.clone() for p in opt.param_groups[0]["params"]])
        return step(opt, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", recording)
    return received

"""Shared helpers for the checkpoint tests: a small but realistic training state and a bitwise comparison."""

import torch

from ganforge import checkpoint


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
    """The shape of what the training loop saves: module and Adam state dicts, scaler, RNG, counters."""
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

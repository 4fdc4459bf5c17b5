"""Official StyleGAN3 (alias-free) generator pickles, configs T and R: a file with the official object graph and
constructor kwargs imports into a network that makes the original's images; unsupported settings are listed.

fixtures/stylegan3-{t,r}.pkl were written by NVlabs' own stylegan3 code under numpy 1.x, as its training loop writes
snapshots, and the images beside them by its gen_images.py procedure (benchmarks/official_stylegan3.py --fixture):
the module source they embed is a marker that would set GANFORGE_FIXTURE_SOURCE_RAN if anything ran it."""

import os
import pickletools
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from interop_fixtures import EasyDict, network_pickle, persistent_tree
from PIL import Image

from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.interop import import_network, load_network
from ganforge.nets import StyleGAN3Generator
from ganforge.snapshot import load_snapshot

FIXTURES = Path(__file__).parent / "fixtures"
# the official images' cases: truncation psi, translation (image widths), rotation (degrees counter-clockwise)
CASES = {"plain": (1.0, "0,0", 0.0), "rotated": (1.0, "0,0", 30.0), "moved": (0.7, "0.3,-0.2", 45.0)}


def _generator(config: str) -> StyleGAN3Generator:
    G = StyleGAN3Generator(resolution=16, img_channels=3, c_dim=0, z_dim=8, w_dim=8, channel_base=256, channel_max=16,
                           mapping_layers=2, config=config, num_layers=4)  # fmt: skip
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():  # random weights and input-magnitude statistics; the designed filters stay as they are
        for p in G.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        for name, b in G.named_buffers():
            if name.endswith("magnitude_ema"):
                b.copy_(torch.rand([], generator=generator) + 0.5)
    return G.eval()


def _official_kwargs(G: StyleGAN3Generator, **extra) -> dict:
    """networks_stylegan3.Generator's kwargs as the released train.py records them: R's widths doubled."""
    a, widen = G.config, 2 if G.config["config"] == "r" else 1
    official = dict(z_dim=a["z_dim"], c_dim=a["c_dim"], w_dim=a["w_dim"], img_resolution=a["resolution"],
                img_channels=a["img_channels"], mapping_kwargs=EasyDict(num_layers=a["mapping_layers"]),
                channel_base=a["channel_base"] * widen, channel_max=a["channel_max"] * widen,
                num_layers=a["num_layers"], num_critical=2, margin_size=10, output_scale=0.25,
                num_fp16_res=a["num_fp16_res"], conv_clamp=a["conv_clamp"], conv_kernel=1 if widen == 2 else 3,
                use_radial_filters=widen == 2, magnitude_ema_beta=0.999)  # fmt: skip
    return {**official, **extra}


def _write(tmp_path, G, kwargs, protocol: int = 4):
    tree = persistent_tree(G, kwargs, class_name="Generator", resample_filters=False)
    path = tmp_path / "network-snapshot.pkl"
    path.write_bytes(network_pickle({"G_ema": tree}, protocol=protocol))
    return path


def _globals(path: Path) -> set[str]:
    """module.name of every global the pickle's opcodes name (STACK_GLOBAL takes the two values pushed before it,
    strings or memoised strings)."""
    memo, pushed, found = {}, [], set()
    for opcode, arg, _ in pickletools.genops(path.read_bytes()):
        if "UNICODE" in opcode.name:
            pushed.append(arg)
        elif opcode.name in ("BINGET", "LONG_BINGET"):
            pushed.append(memo[arg])
        elif opcode.name in ("MEMOIZE", "BINPUT", "LONG_BINPUT"):
            memo[len(memo) if arg is None else arg] = pushed[-1]
        elif opcode.name == "STACK_GLOBAL":
            found.add(f"{pushed[-2]}.{pushed[-1]}")
            pushed.append(None)
        else:
            pushed.append(None)
    return found


@pytest.mark.parametrize("config, protocol", [("t", 4), ("r", 4), ("t", 5)])
def test_an_official_stylegan3_pickle_makes_the_original_images(tmp_path, config, protocol):
    """Protocol 4 is what pickle.dump wrote before Python 3.14, 5 its default since; the layers' numpy sizes are
    pickled by numpy as the official classes hold them (`_reconstruct`, or `_frombuffer` under protocol 5)."""
    G = _generator(config)
    path = _write(tmp_path, G, _official_kwargs(G), protocol)
    arrays = "numpy._core.numeric._frombuffer" if protocol == 5 else "numpy._core.multiarray._reconstruct"
    assert arrays in _globals(path)
    imported, meta = load_network(path)
    assert isinstance(imported, StyleGAN3Generator) and imported.config == G.config
    z = torch.randn([2, 8], generator=torch.Generator().manual_seed(0))
    c = torch.zeros([2, 0])
    with torch.no_grad():
        assert torch.equal(imported(z, c, noise_mode="const"), G(z, c, noise_mode="const"))
    import_network(path, tmp_path / "G.safetensors")
    assert load_snapshot(tmp_path / "G.safetensors")[0].config == G.config


def test_unsupported_stylegan3_settings_are_listed_together(tmp_path):
    G = _generator("t")
    kwargs = _official_kwargs(G, margin_size=5, filter_size=4)
    kwargs["use_radial_filters"] = True  # with 3x3 convolutions: neither T nor R
    with pytest.raises(UserError) as caught:
        load_network(_write(tmp_path, G, kwargs))
    text = "\n".join(caught.value.problems)
    assert "margin_size=5" in text and "filter_size=4" in text and "conv_kernel=3 with use_radial_filters=True" in text


@pytest.mark.parametrize("config", ["t", "r"])
def test_pickles_written_by_nvlabs_code_give_its_images_also_moved_and_rotated(tmp_path, config):
    pkl = FIXTURES / f"stylegan3-{config}.pkl"
    assert "numpy.core.multiarray._reconstruct" in _globals(pkl)  # numpy 1.x's names for its arrays
    official = np.load(FIXTURES / f"stylegan3-{config}-official-images.npz")
    for case, (psi, translate, degrees) in CASES.items():
        outdir = tmp_path / case
        args = ["generate", "--network", str(pkl), "--seeds", "0-2", "--outdir", str(outdir), "--trunc", str(psi),
                "--translate", translate, "--rotate", str(degrees)]  # fmt: skip
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        ours = np.stack([np.asarray(Image.open(p)) for p in sorted(outdir.glob("*.png"))]).astype(int)
        theirs = official[case].astype(int)
        assert theirs.std() > 20, "images a few grey levels wide could not tell a transform apart"
        assert np.abs(ours - theirs).max() <= 1, case
    assert official["plain"].astype(int).__sub__(official["rotated"]).any()  # the cases differ
    assert "GANFORGE_FIXTURE_SOURCE_RAN" not in os.environ

"""R3GAN's networks: the parameter counts of every released configuration (read from the released code, instantiated
on CPU), the fix-up initialisation, conditioning, the stage description's checks and snapshots."""

import pytest
import torch

from ganforge.errors import UserError
from ganforge.limits import architecture_problems
from ganforge.nets import R3GANDiscriminator, R3GANGenerator
from ganforge.nets.configured import make_networks
from ganforge.nets.r3gan import stage_dtype
from ganforge.nets.r3gan_layers import ACTIVATION_GAIN
from ganforge.snapshot import load_snapshot, save_snapshot
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve

# (preset, resolution, classes) -> (G, D) parameters of the released networks (brownvc/R3GAN, train.py's presets built
# by training/networks.py on CPU; the unconditional ImageNet presets are left out: they set a class embedding width
# without classes, and the released G then takes a 128-wide input that a 64-wide z cannot fill).
RELEASED = {
    ("r3gan-cifar10", 32, 0): (20_732_160, 20_683_776),
    ("r3gan-cifar10", 32, 10): (20_781_952, 21_280_512),
    ("r3gan-ffhq64", 64, 0): (22_429_824, 22_381_440),
    ("r3gan-ffhq256", 256, 0): (23_057_952, 23_009_568),
    ("r3gan-imagenet32", 32, 1000): (82_914_304, 86_548_992),
    ("r3gan-imagenet64", 64, 1000): (103_570_432, 107_205_120),
}


@pytest.mark.parametrize("preset, resolution, classes", sorted(RELEASED))
def test_every_released_configuration_has_the_released_parameter_counts(preset, resolution, classes):
    options = TrainOptions(data="/data/x.zip", outdir="/nonexistent/runs", preset=preset, cond=bool(classes))
    cfg = resolve(
        options, Facts(DatasetFacts(resolution=resolution, channels=3, label_dim=classes, name="x"), 1, "cpu")
    )
    with torch.device("meta"):
        G, D = make_networks(cfg)
    counts = (sum(p.numel() for p in G.parameters()), sum(p.numel() for p in D.parameters()))
    assert counts == RELEASED[preset, resolution, classes]


def _tiny(c_dim: int = 0, **extra) -> tuple[R3GANGenerator, R3GANDiscriminator]:
    arch = dict(
        resolution=16, img_channels=3, c_dim=c_dim, widths=[32, 16, 8], cardinalities=[4, 2, 2], blocks=[1, 2, 1]
    )
    torch.manual_seed(0)
    return R3GANGenerator(z_dim=8, embed_dim=8, **arch | extra), R3GANDiscriminator(embed_dim=32, **arch | extra)


def test_fixup_initialisation_starts_every_residual_branch_at_zero_and_scales_the_others_by_depth():
    G, D = _tiny()
    blocks = [m for net in (G, D) for m in net.modules() if type(m).__name__ == "ResidualBlock"]
    assert len(blocks) == 8 and all(not b.conv3.weight.any() for b in blocks)
    x = torch.randn(2, 32, 4, 4)
    assert torch.equal(G.synthesis.stages[0].blocks[0](x), x)  # each block starts as the identity
    torch.manual_seed(1)
    big = R3GANGenerator(resolution=8, z_dim=8, widths=[512, 512], cardinalities=[1, 1], blocks=[2, 2])
    conv1 = big.synthesis.stages[0].blocks[0].conv1.weight  # [1024, 512, 1, 1]: fan-in 512, L = 4 blocks
    assert conv1.std().item() == pytest.approx(ACTIVATION_GAIN * 4 ** (-1 / 4) / 512**0.5, rel=0.01)
    assert big.synthesis.stages[0].transition.basis.std().item() == pytest.approx(1.0, rel=0.05)


def test_g_concatenates_the_class_embedding_to_z_and_d_projects_its_features_on_the_class_embedding():
    G, D = _tiny(c_dim=3)
    z, c = torch.randn(2, 8), torch.eye(3)[[0, 2]]
    ws = G.mapping(z, c)
    assert ws.shape == (2, 1, 16) and torch.equal(ws[:, 0, :8], z)
    assert torch.allclose(ws[:, 0, 8:], c @ G.mapping.embed.T)
    img = G(z, c)
    assert img.shape == (2, 3, 16, 16) and img.dtype == torch.float32
    x = D.from_rgb(img)  # the features before the projection, from D's own layers
    for stage in D.stages:
        x = stage(x, False)
    features = x  # [2, embed_dim]
    assert torch.allclose(D(img, c), (features * (c @ D.embed.T)).sum(1, keepdim=True), atol=1e-6)
    with pytest.raises(UserError, match="no W space"):
        G.mapping(z, c, psi=0.7)


def test_stage_descriptions_that_do_not_fit_the_resolution_or_the_groups_are_refused_with_every_problem():
    with pytest.raises(UserError) as error:
        R3GANGenerator(resolution=16, widths=[32, 16], cardinalities=[3, 2, 2], blocks=[1, 1, 1], kernel=4)
    text = "\n".join(error.value.problems)
    assert "widths: 2 values for 3 stages" in text and "kernel: 4 is even" in text
    with pytest.raises(UserError, match="3 groups do not divide the 32 channels"):
        R3GANGenerator(resolution=16, widths=[32, 16, 8], cardinalities=[3, 2, 2], blocks=[1, 1, 1])
    problems = architecture_problems({"widths": [32] * 10, "blocks": [2, 99], "expansion": 0})
    assert len(problems) == 3 and "1 to 9 integers" in problems[0]


def test_reduced_precision_stages_are_the_top_ones_in_bfloat16():
    G, D = _tiny(num_fp16_res=2)
    assert [s.reduced for s in G.synthesis.stages] == [False, True, True]
    assert [s.reduced for s in D.stages] == [True, True, False]  # D's first stages are the top resolutions
    assert stage_dtype(True, False) == torch.bfloat16 and stage_dtype(True, True) == stage_dtype(False, False)
    seen = []
    for stage in [*G.synthesis.stages, *D.stages]:
        stage.register_forward_hook(lambda module, inputs, out: seen.append((module.reduced, out.dtype)))
    with torch.no_grad():
        img = G(torch.randn(2, 8), None)
        logits = D(img, None)
    assert img.dtype == logits.dtype == torch.float32  # the networks' outputs stay float32
    assert [dtype for reduced, dtype in seen if reduced] == [torch.bfloat16] * 4
    assert [dtype for reduced, dtype in seen if not reduced] == [torch.float32] * 2


def test_freeze_d_counts_the_input_layer_then_blocks_and_transitions_from_the_top():
    _, D = _tiny()
    assert D.layers_from_input()[:4] == ["from_rgb", "stages.0.blocks.0", "stages.0.transition", "stages.1.blocks.0"]
    frozen = D.frozen_parameters(2)
    assert frozen == {"from_rgb.weight"} | {n for n, _ in D.named_parameters() if n.startswith("stages.0.blocks.0.")}


def test_a_snapshot_of_an_r3gan_generator_loads_as_the_same_network(tmp_path):
    G, _ = _tiny(c_dim=3)
    save_snapshot(tmp_path / "g.safetensors", G, {"kimg": 1})
    loaded, meta = load_snapshot(tmp_path / "g.safetensors")
    z, c = torch.randn(2, 8), torch.eye(3)[:2]
    assert type(loaded) is R3GANGenerator and loaded.config == G.config and meta["kimg"] == 1
    assert torch.equal(loaded(z, c), G.eval()(z, c))

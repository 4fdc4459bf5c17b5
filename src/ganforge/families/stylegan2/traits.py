"""StyleGAN2's record: its preset rows (ADA's `cfg_specs`) and what its networks can do."""

import math

from ganforge.families.preset import Preset
from ganforge.families.record import Family
from ganforge.limits import MAX_CHANNELS

# The official configurations (Karras et al. 2020, "Training GANs with limited data", App. D and its released
# `cfg_specs`): batch, minibatch-stddev group, channel base (fmaps x 32768), learning rate, R1 gamma, EMA half-life in
# kimg, EMA ramp-up, mapping depth. `auto` derives most of them from the resolution; `tiny` is a small, fast CPU
# setting, whose ADA moves p within its 40 kimg (20 kimg from 0 to 1, not the paper's 500).
PRESETS = {
    "auto": Preset(ema_rampup=0.05, mapping_layers=2, kimg=25000),
    "stylegan2": Preset(batch=32, mbstd=4, channel_base=32768, lr=0.002, gamma=10.0, ema_kimg=10.0, mapping_layers=8,
                        kimg=25000),
    "paper256": Preset(batch=64, mbstd=8, channel_base=16384, lr=0.0025, gamma=1.0, ema_kimg=20.0, mapping_layers=8,
                       kimg=25000, resolution=256),
    "paper512": Preset(batch=64, mbstd=8, channel_base=32768, lr=0.0025, gamma=0.5, ema_kimg=20.0, mapping_layers=8,
                       kimg=25000, resolution=512),
    "paper1024": Preset(batch=32, mbstd=4, channel_base=32768, lr=0.002, gamma=2.0, ema_kimg=10.0, mapping_layers=8,
                        kimg=25000, resolution=1024),
    "cifar": Preset(batch=64, mbstd=32, channel_base=32768, lr=0.0025, gamma=0.01, ema_kimg=500.0, ema_rampup=0.05,
                    mapping_layers=2, kimg=100000, resolution=32, pl_weight=0.0, style_mixing=0.0, d_arch="orig"),
    "tiny": Preset(batch=16, mbstd=4, channel_base=512, lr=0.0025, gamma=0.05, ema_kimg=1.0, ema_rampup=0.05,
                   mapping_layers=2, kimg=40, channel_max=64, z_dim=64, tick_kimg=0.8, snap=5, ada_kimg=20.0),
}  # fmt: skip


def describe_stylegan(cfg) -> list[str]:
    """The loss, EMA, networks and layouts of a StyleGAN2 run (and of a StyleGAN3 one, which trains StyleGAN2's D
    with its loss)."""
    from ganforge.config import lazy_ratio  # imported on use: ganforge.config asks the families for older layouts

    s, lo, m = cfg.schedule, cfg.loss, cfg.model
    return (
        [
            f"R1 gamma {lo.gamma:g} every {lo.r1_interval} steps; path length weight {lo.pl_weight:g} every "
            f"{lo.pl_interval} steps",
            f"lazy regularisation: G lr x {lazy_ratio(lo.pl_interval):.4f}, D lr x {lazy_ratio(lo.r1_interval):.4f} "
            f"(betas raised to the same power)",
            f"EMA half-life {s.ema_kimg:g} kimg, ramp-up {s.ema_rampup}",
            f"networks: {m.generator}, channel base {m.channel_base}, max {m.channel_max}, mapping {m.mapping_layers} "
            f"layers, minibatch-stddev group {m.mbstd_group}",
            "layouts: "
            + ", ".join(f"{net} {layout}" for net, layout in (("G", m.g_arch), ("D", m.d_arch)) if layout)
            + "".join(
                f"; {net} attends at {','.join(map(str, at))}" for net, at in (("G", m.g_attn), ("D", m.d_attn)) if at
            ),
        ]
        + _describe_aspect(cfg)
        + _describe_growth(cfg)
    )


def _describe_aspect(cfg) -> list[str]:
    rows, cols = cfg.data.aspect
    if (rows, cols) == (1, 1):
        return []
    res = cfg.data.resolution
    return [
        f"non-square images {res * cols}x{res * rows}: blocks from 4 to {res} px on the short side, a "
        f"{4 * cols}x{4 * rows} learned constant in G and a {4 * cols}x{4 * rows} last block in D"
    ]


def _describe_growth(cfg) -> list[str]:
    s, res = cfg.schedule, cfg.data.resolution
    if not cfg.model.grow:
        return []
    doublings = round(math.log2(res // s.grow_from))
    return [
        f"growth: from {s.grow_from} px to {res} px, {s.grow_kimg:g} kimg at each resolution and {s.grow_kimg:g} kimg "
        f"per fade; fully grown at {s.grow_kimg * 2 * doublings:g} kimg; batch {s.batch} at every stage"
    ]


def stylegan_arguments(arch) -> tuple[dict, dict, dict]:
    """(what G and D share, G's latent and mapping arguments, D's arguments) from an `Architecture`
    (ganforge.config.architecture), as StyleGAN2 and StyleGAN3 build them (both train StyleGAN2's D, grown where the
    config grows)."""
    model = arch.model
    common = dict(
        resolution=arch.resolution,
        img_channels=arch.channels,
        c_dim=arch.label_dim,
        channel_base=model.channel_base,
        channel_max=model.channel_max,
        num_fp16_res=arch.fp16_res,
        conv_clamp=arch.conv_clamp,
    )
    mapping = dict(z_dim=model.z_dim, w_dim=model.w_dim, mapping_layers=model.mapping_layers)
    return common, mapping, _d_arguments(model, common)


def _d_arguments(model, common: dict) -> dict:
    growing = {"progressive": True} if model.grow is True else {}
    return dict(mbstd_group_size=model.mbstd_group, architecture=model.d_arch, attention=list(model.d_attn), **common,
                **growing)  # fmt: skip


def network_arguments(arch) -> tuple[dict, dict]:
    """StyleGAN2's G and D: their layouts (`architecture`), where they attend (`attention`), whether they can grow
    (`progressive`), and a non-square aspect where the data has one (networks of square images are built without)."""
    common, mapping, _ = stylegan_arguments(arch)
    model, aspect = arch.model, list(arch.aspect)
    common |= {} if aspect == [1, 1] else {"aspect": aspect}
    growing = {"progressive": True} if model.grow is True else {}
    g = {"generator": model.generator, **common, **mapping, "architecture": model.g_arch,
         "attention": list(model.g_attn), **growing}  # fmt: skip
    return g, _d_arguments(model, common)


def stylegan_pretrained_fields(g: dict, d: dict | None) -> dict:
    """The model fields pretrained StyleGAN networks decide: widths, latents, mapping depth, generator, StyleGAN3's
    layer count, G's layout and attention (none but StyleGAN2's has either); a file without D leaves D's to the
    options."""
    d_fields = {} if d is None else {"model.d_arch": d["architecture"], "model.d_attn": tuple(d.get("attention", ()))}
    return {
        "model.z_dim": g["z_dim"],
        "model.w_dim": g["w_dim"],
        "model.mapping_layers": g["mapping_layers"],
        "model.channel_base": g["channel_base"],
        "model.channel_max": g["channel_max"],
        "model.synthesis_layers": g.get("num_layers"),
        "model.g_arch": g.get("architecture"),
        "model.g_attn": tuple(g.get("attention", ())),
    } | d_fields


def no_problems(g: dict, preset_given: bool, path: str) -> list[str]:
    """A pretrained StyleGAN network trains with any StyleGAN preset: nothing to refuse."""
    return []


STYLEGAN_D_SHARES = ("resolution", "img_channels", "c_dim", "channel_base", "channel_max")

STYLEGAN2 = Family(
    name="stylegan2",
    title="StyleGAN2",
    generators=("stylegan2",),
    presets=PRESETS,
    g_layouts=True,
    d_layouts=True,
    grows=True,
    non_square=True,
    reduced_mode="fp16",
    clamps=True,
    max_channels=MAX_CHANNELS,
    recomputes=True,
    magnitude_ema=False,
    loss="stylegan2",
    ema_from_trained_batch=False,
    gamma_per_pixel=0.0002,  # ADA's heuristic (Karras et al. 2020, App. D): 0.0002 x res^2 / batch
    describe=describe_stylegan,
    network_arguments=network_arguments,
    pretrained_fields=stylegan_pretrained_fields,
    pretrained_problems=no_problems,
    d_shares=STYLEGAN_D_SHARES,
    sweep_space=(
        "gamma=log:0.01..100",
        "aug=ada|noaug",
        "target=0.4..0.8",
        "glr=log:0.0005..0.005",
        "dlr=log:0.0005..0.005",
        "mirror=true|false",
    ),
)

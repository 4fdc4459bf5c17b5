"""R3GAN's record: its released configurations as preset rows, and what its networks can do."""

from ganforge.errors import UserError
from ganforge.families.preset import Preset
from ganforge.families.record import Family
from ganforge.limits import (
    MAX_CHANNEL_BASE,
    MAX_R3GAN_BLOCKS,
    MAX_R3GAN_WIDTH,
    MAX_RESOLUTION,
    channels_at,
    shown,
    stage_resolutions,
)

# Huang et al. 2024, Sec. 4 and the released configurations: widths min(24576 / res, 768) with 8 channels per group
# (ImageNet: 1536 wide, 16 per group), 2 blocks per stage, z of 64 dimensions; Adam with beta1 0 and beta2 0.9
# annealed to 0.99, lr 2e-4 annealed to 5e-5, gamma (R1 and R2 each) annealed to a tenth, EMA half-life and the
# augmentation's p annealed from 0, all by a cosine over 20 Mimg (ImageNet: 200 Mimg); the augmentation is ADA's
# blit, geometric and colour transforms with cutout at a fixed, annealed p; under bf16 the top 3 stages (4 from 64 px)
# compute in bfloat16 and the rest in float32, without autocast (`fp16_res`). The released setup trains until stopped;
# these rows end at the annealing's end (--kimg trains longer).
_ROW = dict(generator="r3gan", channel_base=24576, channel_max=768, group_channels=8, blocks_per_stage=2,
            mapping_layers=0, z_dim=64, lr=2e-4, lr_min_ratio=0.25, beta2=0.9, beta2_final=0.99, anneal_kimg=20000.0,
            kimg=20000, aug="fixed", aug_pipe="bgcc", pl_weight=0.0, style_mixing=0.0, mbstd=1, tick_kimg=4.0,
            snap=50)  # fmt: skip
_IMAGENET = dict(batch=4096, channel_max=1536, group_channels=16, ema_kimg=50000.0, anneal_kimg=200000.0,
                 kimg=200000)  # fmt: skip
PRESETS = {
    **{
        f"r3gan-{name}": Preset(**_ROW | row)
        for name, row in dict(
            cifar10=dict(resolution=32, fp16_res=3, batch=512, ema_kimg=5000.0, aug_p=0.55, gamma=0.05,
                         gamma_final=0.005),
            ffhq64=dict(resolution=64, fp16_res=4, batch=256, ema_kimg=500.0, aug_p=0.3, gamma=2.0, gamma_final=0.2),
            ffhq256=dict(resolution=256, fp16_res=4, batch=256, ema_kimg=500.0, aug_p=0.3, gamma=150.0,
                         gamma_final=15.0),
            imagenet32=_IMAGENET | dict(resolution=32, fp16_res=3, channel_base=49152, aug_p=0.5, gamma=0.5,
                                        gamma_final=0.05),
            imagenet64=_IMAGENET | dict(resolution=64, fp16_res=4, channel_base=98304, aug_p=0.4, gamma=1.0,
                                        gamma_final=0.1),
        ).items()
    },
    "tiny-r3gan": Preset(**_ROW | dict(channel_base=512, channel_max=64, blocks_per_stage=1, anneal_kimg=40.0,
                         kimg=40, fp16_res=2, batch=16, ema_kimg=1.0, aug_p=0.2, gamma=0.05, gamma_final=0.005,
                         z_dim=32, tick_kimg=0.8, snap=5)),
}  # fmt: skip


def describe_r3gan(cfg) -> list[str]:
    """Its loss, annealed schedules, networks and bfloat16 stages."""
    s, lo, o, m = cfg.schedule, cfg.loss, cfg.optim, cfg.model
    over = f"annealed by a half cosine over {s.anneal_kimg:g} kimg" if s.anneal_kimg is not None else "constant"
    final = (
        (lambda start, end: f"{start:g} to {end:g}") if s.anneal_kimg is not None else (lambda start, _: f"{start:g}")
    )
    return [
        "loss: relativistic pairing (RpGAN) with R1 on reals and R2 on fakes at every D step (no lazy "
        "regularisation); D steps before G steps",
        f"{over}: gamma {final(lo.gamma, lo.gamma_final)}, Adam beta2 {final(o.beta2, o.beta2_final)} (beta1 "
        f"{o.beta1:g}), EMA half-life {final(0 if s.anneal_kimg is not None else s.ema_kimg, s.ema_kimg)} kimg",
        f"networks: r3gan, widths min({m.channel_base} / res, {m.channel_max}), groups of {m.group_channels} channels, "
        f"{m.blocks_per_stage} blocks per stage, z {m.z_dim}",
    ] + ([f"bf16: the top {p.fp16_res} stage(s) of G and D compute in bfloat16 (as released), the others in float32; "
          "no autocast"] if (p := cfg.precision).fp16_res else [])  # fmt: skip


def network_arguments(arch) -> tuple[dict, dict]:
    """R3GAN's stages from the Config: widths min(channel_base / res, channel_max) as StyleGAN's, each stage's
    convolution grouped in width / group_channels groups; the class embedding is z_dim wide in G and as wide as the
    4x4 stage in D (as released)."""
    model = arch.model
    problems = [
        f"{key}={shown(value)}: must be an integer from 1 to {high}"
        for key, value, high in (("data.resolution", arch.resolution, MAX_RESOLUTION),
                                 ("model.channel_base", model.channel_base, MAX_CHANNEL_BASE),
                                 ("model.channel_max", model.channel_max, MAX_R3GAN_WIDTH),
                                 ("model.group_channels", model.group_channels, MAX_R3GAN_WIDTH),
                                 ("model.blocks_per_stage", model.blocks_per_stage, MAX_R3GAN_BLOCKS))
        if type(value) is not int or not 1 <= value <= high
    ]  # fmt: skip
    if problems:  # the values below are computed from these, so they are checked first (a stored config is untrusted)
        raise UserError(*problems)
    widths = [channels_at(res, model.channel_base, model.channel_max) for res in stage_resolutions(arch.resolution)]
    stages = dict(
        resolution=arch.resolution,
        img_channels=arch.channels,
        c_dim=arch.label_dim,
        widths=widths,
        cardinalities=[max(width // model.group_channels, 1) for width in widths],
        blocks=[model.blocks_per_stage] * len(widths),
        num_fp16_res=arch.fp16_res,
    )
    g = dict(generator="r3gan", z_dim=model.z_dim, embed_dim=model.z_dim, **stages)
    return g, dict(embed_dim=widths[0], **stages)


# What ganforge's R3GAN config fixes (network_arguments): the released expansion and kernel, G's class embedding as
# wide as z, D's as the 4x4 stage.
_FIXED = {"expansion": 2, "kernel": 3}


def stage_fields(g: dict) -> dict | None:
    """The model fields that describe R3GAN stages `g` (constructor arguments), or None when no Config describes them:
    widths min(channel_base / res, channel_max), width / group_channels groups, the same blocks in every stage."""
    widths, resolutions = g["widths"], stage_resolutions(g["resolution"])
    base, top = widths[-1] * g["resolution"], widths[0]
    group = widths[0] // g["cardinalities"][0]
    fields = {"model.channel_base": base, "model.channel_max": top, "model.group_channels": group,
              "model.blocks_per_stage": g["blocks"][0]}  # fmt: skip
    fits = (
        widths == [channels_at(res, base, top) for res in resolutions]
        and list(g["cardinalities"]) == [max(width // group, 1) for width in widths]
        and len(set(g["blocks"])) == 1
        and all(g[key] == value for key, value in _FIXED.items())
        and g["embed_dim"] in (0, g["z_dim"])
    )
    return fields if fits else None


def pretrained_fields(g: dict, d: dict | None) -> dict:
    """The model fields a pretrained R3GAN network decides: its stages (pretrained_problems says why when no Config
    describes them), its latent, no mapping network."""
    return (stage_fields(g) or {}) | {"model.mapping_layers": 0, "model.z_dim": g["z_dim"], "model.w_dim": g["z_dim"]}


def pretrained_problems(g: dict, preset_given: bool, path: str) -> list[str]:
    """An R3GAN network trains with R3GAN's recipe (lr, gamma and their annealing), which only an r3gan preset
    states, and is rebuilt from config fields, which must describe its stages."""
    problems = []
    if not preset_given:
        problems.append(
            f"--resume {path}: an R3GAN network; pass --cfg with an r3gan preset for its training recipe (e.g. "
            "--cfg r3gan-ffhq64: learning rate, gamma and their annealing)"
        )
    if stage_fields(g) is None:
        problems.append(
            f"--resume {path}: its stages (widths {g['widths']}, groups {g['cardinalities']}, blocks {g['blocks']}, "
            f"expansion {g['expansion']}, kernel {g['kernel']}) are not ones ganforge's R3GAN configuration "
            "describes (widths min(base / res, max), a fixed group width, the same blocks in every stage, expansion "
            "2, kernel 3); generate from it or export it instead"
        )
    return problems


R3GAN = Family(
    name="r3gan",
    title="R3GAN",
    generators=("r3gan",),
    presets=PRESETS,
    g_layouts=False,
    d_layouts=False,
    grows=False,
    non_square=False,
    reduced_mode="bf16",  # its released configurations run their top stages in bfloat16
    clamps=False,
    max_channels=MAX_R3GAN_WIDTH,
    recomputes=True,
    magnitude_ema=False,
    loss="relativistic",
    ema_from_trained_batch=False,
    gamma_per_pixel=0.0002,  # unused: every row states its gamma
    describe=describe_r3gan,
    network_arguments=network_arguments,
    pretrained_fields=pretrained_fields,
    pretrained_problems=pretrained_problems,
    d_shares=("resolution", "img_channels", "c_dim", "widths", "cardinalities", "blocks", "expansion", "kernel"),
    sweep_space=("gamma=log:0.01..10", "glr=log:0.00005..0.0005", "dlr=log:0.00005..0.0005", "mirror=true|false"),
)

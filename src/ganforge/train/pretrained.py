"""What a run takes from the pretrained files it starts from (`--resume FILE[,FILE]`): the architecture and the files'
hashes, and the checks that the options and the dataset fit that architecture, each problem named with both values
and the fix. The weights themselves are loaded when training starts (checkpointing.load_pretrained)."""

from ganforge.config import Config, ModelConfig
from ganforge.interop.pretrained import PretrainedFacts
from ganforge.nets.layers import channels_at
from ganforge.nets.r3gan import stage_resolutions
from ganforge.presets import PRESETS
from ganforge.train.layouts import parse_resolution_list

# D's constructor arguments that ganforge derives from the same fields as G's.
_SHARED = ("resolution", "img_channels", "c_dim", "channel_base", "channel_max")
_R3GAN_SHARED = ("resolution", "img_channels", "c_dim", "widths", "cardinalities", "blocks", "expansion", "kernel")
# What ganforge's R3GAN config fixes (nets.configured): the released expansion and kernel, G's class embedding as
# wide as z, D's as the 4x4 stage.
_R3GAN_FIXED = {"expansion": 2, "kernel": 3}


def r3gan_fields(g: dict) -> dict | None:
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
        and all(g[key] == value for key, value in _R3GAN_FIXED.items())
        and g["embed_dim"] in (0, g["z_dim"])
    )
    return fields if fits else None


def pretrained_fields(facts: PretrainedFacts) -> dict:
    """The Config fields the pretrained generator decides (dotted names), overriding the --cfg row."""
    g = facts.g_arch
    if facts.generator == "r3gan":
        described = r3gan_fields(g) or {}  # pretrained_problems says why when none
        common = {"model.generator": "r3gan", "run.resume_sha256": facts.sha256, "model.mapping_layers": 0}
        return described | common | {"model.z_dim": g["z_dim"], "model.w_dim": g["z_dim"]}
    # G's layout and attention (none but StyleGAN2's has either); a file without D leaves D's to the options
    d = {} if facts.d_arch is None else {"model.d_arch": facts.d_arch["architecture"],
                                         "model.d_attn": tuple(facts.d_arch.get("attention", ()))}  # fmt: skip
    return {
        "model.z_dim": g["z_dim"],
        "model.w_dim": g["w_dim"],
        "model.mapping_layers": g["mapping_layers"],
        "model.channel_base": g["channel_base"],
        "model.channel_max": g["channel_max"],
        "model.generator": facts.generator,
        "model.synthesis_layers": g.get("num_layers"),
        "model.g_arch": g.get("architecture"),
        "model.g_attn": tuple(g.get("attention", ())),
        "run.resume_sha256": facts.sha256,
    } | d


def _size(resolution: int, aspect) -> str:
    """WxH of images of the networks' `resolution` (the shorter side) and `aspect` (rows, cols)."""
    return f"{resolution * aspect[1]}x{resolution * aspect[0]}"


def pretrained_problems(cfg: Config, asked, facts: PretrainedFacts, path: str) -> list[str]:
    """What does not fit the pretrained networks: the dataset's size, channels and labels, an explicit --cfg of
    another generator, a D that ganforge cannot build beside its G. `asked`: the options as given."""
    g, problems = facts.g_arch, []
    res, channels, aspect = g["resolution"], g["img_channels"], tuple(g.get("aspect", (1, 1)))
    if (cfg.data.resolution, tuple(cfg.data.aspect), cfg.data.channels) != (res, aspect, channels):
        theirs, ours = _size(res, aspect), _size(cfg.data.resolution, cfg.data.aspect)
        asked_size = res if aspect == (1, 1) else theirs
        problems.append(
            f"--data: {ours} images with {cfg.data.channels} channel(s), but {path} was trained on {theirs} with "
            f"{channels}; rebuild the dataset to fit it: ganforge dataset build SRC DEST --resolution {asked_size} "
            f"--channels {channels}"
        )
    if g["c_dim"] != cfg.data.label_dim:
        problems.append(
            f"--cond: {path} is conditional on {g['c_dim']} classes but this run has {cfg.data.label_dim}; pass --cond "
            f"with a dataset of {g['c_dim']} classes"
            if g["c_dim"]
            else f"--cond: {path} is an unconditional network; drop --cond"
        )
    if asked.preset is not None:
        kind = PRESETS[asked.preset].generator or ModelConfig.generator
        if kind != facts.generator:
            problems.append(
                f"--cfg {asked.preset}: builds a {kind} generator, but {path} holds a {facts.generator} one; drop "
                f"--cfg (the architecture comes from --resume) or pass a {facts.generator} preset"
            )
    if asked.grow:
        problems.append(f"--grow: progressive growing trains from scratch (Karras et al. 2018), while {path} is "
                        "trained; drop --grow to fine-tune it")  # fmt: skip
    problems += _r3gan_problems(asked, facts, path) if facts.generator == "r3gan" else []
    problems += _shape_problems(asked, facts, path)
    d, shared = facts.d_arch, _R3GAN_SHARED if facts.generator == "r3gan" else _SHARED
    if d is not None and any(d[key] != g[key] for key in shared):
        differing = ", ".join(f"{key} {d[key]} (G: {g[key]})" for key in shared if d[key] != g[key])
        problems.append(
            f"--resume {path}: its D differs from its G in {differing}, and ganforge builds both from the same "
            "values; start from its generator alone (ganforge import SRC G.safetensors, then --resume G.safetensors)"
        )
    return problems


def _shape_problems(asked, facts: PretrainedFacts, path: str) -> list[str]:
    """A --cbase, --cmax, --g-arch, --d-arch, --g-attn or --d-attn that differs from the pretrained networks' (whose
    widths, layouts and attention the run takes)."""
    fields = pretrained_fields(facts)
    given = (("--cbase", asked.cbase, "model.channel_base", "widths"),
             ("--cmax", asked.cmax, "model.channel_max", "widths"),
             ("--g-arch", asked.g_arch, "model.g_arch", "layouts"),
             ("--d-arch", asked.d_arch, "model.d_arch", "layouts"),
             ("--g-attn", _resolution_list(asked.g_attn), "model.g_attn", "attention"),
             ("--d-attn", _resolution_list(asked.d_attn), "model.d_attn", "attention"))  # fmt: skip
    return [
        f"{flag} {_shown_value(value)}: {path} has {_shown_value(fields[key])}, and its networks decide their {what}; "
        f"drop {flag}"
        for flag, value, key, what in given
        if value is not None and fields.get(key) is not None and value != fields[key]
    ]


def _resolution_list(text: str | None) -> tuple[int, ...] | None:
    """A given --g-attn/--d-attn as the field holds it; None when not given or not a list (refused elsewhere)."""
    parsed = None if text is None else parse_resolution_list("", text)
    return None if isinstance(parsed, str) else parsed


def _shown_value(value) -> str:
    """A field's value as an option writes it: (16, 32) as 16,32, () as none."""
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "none"
    return str(value)


def _r3gan_problems(asked, facts: PretrainedFacts, path: str) -> list[str]:
    """An R3GAN network trains with R3GAN's recipe (lr, gamma and their annealing), which only an r3gan preset
    states, and is rebuilt from config fields, which must describe its stages."""
    problems = []
    if asked.preset is None:
        problems.append(
            f"--resume {path}: an R3GAN network; pass --cfg with an r3gan preset for its training recipe (e.g. "
            "--cfg r3gan-ffhq64: learning rate, gamma and their annealing)"
        )
    g = facts.g_arch
    if r3gan_fields(g) is None:
        problems.append(
            f"--resume {path}: its stages (widths {g['widths']}, groups {g['cardinalities']}, blocks {g['blocks']}, "
            f"expansion {g['expansion']}, kernel {g['kernel']}) are not ones ganforge's R3GAN configuration "
            "describes (widths min(base / res, max), a fixed group width, the same blocks in every stage, expansion "
            "2, kernel 3); generate from it or export it instead"
        )
    return problems

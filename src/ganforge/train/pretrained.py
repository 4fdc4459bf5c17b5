"""What a run takes from the pretrained files it starts from (`--resume FILE[,FILE]`): the architecture and the files'
hashes, and the checks that the options and the dataset fit that architecture, each problem named with both values
and the fix. The weights themselves are loaded when training starts (checkpointing.load_pretrained)."""

from ganforge.config import Config, ModelConfig
from ganforge.families import family_of
from ganforge.interop.pretrained import PretrainedFacts
from ganforge.presets import PRESETS
from ganforge.train.layouts import parse_resolution_list


def pretrained_fields(facts: PretrainedFacts) -> dict:
    """The Config fields the pretrained generator decides (dotted names), overriding the --cfg row: those of its
    family's architecture, the family itself, and the files' hashes."""
    fields = family_of(facts.generator).pretrained_fields(facts.g_arch, facts.d_arch)
    return fields | {"model.generator": facts.generator, "run.resume_sha256": facts.sha256}


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
    family = family_of(facts.generator)
    problems += family.pretrained_problems(g, asked.preset is not None, path)
    problems += _shape_problems(asked, facts, path)
    d, shared = facts.d_arch, family.d_shares
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

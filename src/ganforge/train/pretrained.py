"""What a run takes from the pretrained files it starts from (`--resume FILE[,FILE]`): the architecture and the files'
hashes, and the checks that the options and the dataset fit that architecture, each problem named with both values
and the fix. The weights themselves are loaded when training starts (checkpointing.load_pretrained)."""

from ganforge.config import Config, ModelConfig
from ganforge.interop.pretrained import PretrainedFacts
from ganforge.presets import PRESETS

# D's constructor arguments that ganforge derives from the same fields as G's.
_SHARED = ("resolution", "img_channels", "c_dim", "channel_base", "channel_max")


def pretrained_fields(facts: PretrainedFacts) -> dict:
    """The Config fields the pretrained generator decides (dotted names), overriding the --cfg row."""
    g = facts.g_arch
    return {
        "model.z_dim": g["z_dim"],
        "model.w_dim": g["w_dim"],
        "model.mapping_layers": g["mapping_layers"],
        "model.channel_base": g["channel_base"],
        "model.channel_max": g["channel_max"],
        "model.generator": facts.generator,
        "model.synthesis_layers": g.get("num_layers"),
        "run.resume_sha256": facts.sha256,
    }


def pretrained_problems(cfg: Config, asked, facts: PretrainedFacts, path: str) -> list[str]:
    """What does not fit the pretrained networks: the dataset's size, channels and labels, an explicit --cfg of
    another generator, a D that ganforge cannot build beside its G. `asked`: the options as given."""
    g, problems = facts.g_arch, []
    res, channels = g["resolution"], g["img_channels"]
    if (cfg.data.resolution, cfg.data.channels) != (res, channels):
        problems.append(
            f"--data: {cfg.data.resolution}x{cfg.data.resolution} images with {cfg.data.channels} channel(s), but "
            f"{path} was trained on {res}x{res} with {channels}; rebuild the dataset to fit it: ganforge dataset "
            f"build SRC DEST --resolution {res} --channels {channels}"
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
    d = facts.d_arch
    if d is not None and any(d[key] != g[key] for key in _SHARED):
        differing = ", ".join(f"{key} {d[key]} (G: {g[key]})" for key in _SHARED if d[key] != g[key])
        problems.append(
            f"--resume {path}: its D differs from its G in {differing}, and ganforge builds both from the same "
            "values; start from its generator alone (ganforge import SRC G.safetensors, then --resume G.safetensors)"
        )
    return problems

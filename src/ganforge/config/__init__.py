"""Training configuration: `Config`, a tree of frozen dataclass sections (`ganforge.config.sections`, where each
`ganforge train` option is declared on the field it sets), its JSON form, the layouts older ganforge wrote, and the
split between the fields that define the training maths and the rest.

A `Config` is what `ganforge.train.resolver.resolve` makes of the command-line options; it is written as
`config.json` into the run directory, and `Config.to_json()` / `Config.from_json()` round-trip it, but for the
secrets of its URLs: its fields hold the URLs as typed, for the requests, and every form it takes outside memory
(`to_dict`: config.json, checkpoints, trackers, --dry-run, the comparisons with recorded runs) holds them as
`urls.public_url` shows them. This package imports neither torch nor click so that it stays cheap to import
(`ganforge --help` reads it).
"""

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from ganforge.config.sections import (
    AUGMENT_PIPES,
    AUGMENTS,
    AUTO_PRECISION,
    DIFFAUG_OPS,
    LR_SCHEDULES,
    PRECISIONS,
    PRESET,
    AugmentConfig,
    DataConfig,
    LossConfig,
    ModelConfig,
    OptimConfig,
    PrecisionConfig,
    RunConfig,
    RuntimeConfig,
    ScheduleConfig,
)
from ganforge.families import DEFAULT_GENERATOR, GENERATORS, family_of
from ganforge.option import non_maths_paths, setting
from ganforge.urls import public_value

# The sections and the choices of their options, importable from here as from their module.
__all__ = [
    "AUGMENT_PIPES", "AUGMENTS", "AUTO_PRECISION", "DIFFAUG_OPS", "LR_SCHEDULES", "PRECISIONS",
    "AugmentConfig", "Config", "DataConfig", "LossConfig", "ModelConfig", "OptimConfig", "PrecisionConfig", "RunConfig",
    "RuntimeConfig", "ScheduleConfig",
]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Config:
    """The resolved training configuration, written to `config.json` in the run directory."""

    preset: str = PRESET  # the --cfg row the other values started from
    world_size: int = setting(maths=False)
    data: DataConfig
    model: ModelConfig
    loss: LossConfig
    optim: OptimConfig
    schedule: ScheduleConfig
    precision: PrecisionConfig
    runtime: RuntimeConfig = setting(maths=False)
    augment: AugmentConfig
    run: RunConfig = setting(maths=False)

    @property
    def accumulation(self) -> int:
        """Micro-batches per rank per step: batch = batch_gpu x world_size x accumulation."""
        return self.schedule.batch // (self.schedule.batch_gpu * self.world_size)

    def to_dict(self) -> dict:
        """The configuration as it is recorded and compared with recorded ones: every URL in it public."""
        return public_value(dataclasses.asdict(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        """From `to_dict`'s layout; also reads config.json files in the layouts of older ganforge (`upgrade`)."""
        return from_flat(flatten(upgrade(d)))

    @classmethod
    def from_json(cls, text: str) -> "Config":
        return cls.from_dict(json.loads(text))


def from_flat(values: dict) -> Config:
    """A Config from its dotted fields (`{"loss.gamma": 10.0, ...}`); a field left out takes its default."""
    unknown = set(values) - {f"{p}.{f.name}" if p else f.name for p, f in _fields(Config)}
    assert not unknown, f"not fields of Config: {sorted(unknown)}"
    return section_from_flat(Config, "", values)


def section_from_flat(cls, prefix: str, values: dict):
    """The section `cls` of a Config (the whole Config with prefix "") from the dotted fields in `values` that start
    with `prefix` ("model."); a field left out takes its default, a JSON list becomes the tuple the field holds."""
    kwargs = {}
    for field in dataclasses.fields(cls):
        path = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(field.type):
            kwargs[field.name] = section_from_flat(field.type, f"{path}.", values)
        elif path in values:
            value = values[path]
            kwargs[field.name] = tuple(value) if isinstance(value, list) else value
    return cls(**kwargs)


def _fields(cls, prefix: str = "") -> list[tuple[str, dataclasses.Field]]:
    """(section path, field) for every leaf field of `cls`."""
    found = []
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(field.type):
            found += _fields(field.type, f"{prefix}.{field.name}".lstrip("."))
        else:
            found.append((prefix, field))
    return found


# Fields renamed or moved since config.json files and checkpoints were first written: old dotted name -> new.
RENAMED = {
    "cfg": "preset",
    "precision.precision": "precision.mode",
    "model.num_fp16_res": "precision.fp16_res",
    "model.conv_clamp": "precision.conv_clamp",
    **{
        f"precision.{name}": f"runtime.{name}"
        for name in ("device", "compile", "channels_last", "deterministic", "grad_checkpoint", "allreduce_bucket_mb")
    },
}


def upgrade(config_dict: dict) -> dict:
    """A config dict (nested as config.json holds it, or flattened as checkpoints store it) in today's layout, so
    that run folders and checkpoints of older ganforge stay readable and comparable (RENAMED, the layouts older
    networks were built with, and values stored in an older form)."""
    flat = flatten(config_dict)
    renamed = {RENAMED.get(key, key): value for key, value in flat.items()}
    renamed |= _older_layouts(renamed) | _older_values(renamed)
    if renamed == flat:
        return config_dict
    nested = any(isinstance(value, dict) for value in config_dict.values())
    return unflatten(renamed) if nested else renamed


def _older_layouts(flat: dict) -> dict:
    """The G and D layouts (model.g_arch/d_arch) of a config written before they could be chosen: its StyleGAN2 G
    was built with skips and its StyleGAN2 D (StyleGAN3's too) with residual blocks, config F's."""
    if not any(key.startswith("model.") for key in flat):
        return {}
    generator = flat.get("model.generator", DEFAULT_GENERATOR)
    if generator not in GENERATORS:  # refused where the config is checked
        return {}
    return {key: value for key, value in family_of(generator).older_layouts().items() if key not in flat}


# --compile was a switch before it took a mode: true compiled in torch.compile's default mode.
COMPILE_SWITCH = {True: "default", False: "off"}


def _older_values(flat: dict) -> dict:
    """Values whose form has changed since: runtime.compile as a switch (true / false) becomes its mode."""
    compile_ = flat.get("runtime.compile")
    return {"runtime.compile": COMPILE_SWITCH[compile_]} if isinstance(compile_, bool) else {}


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; tuples become lists, as they come back from JSON (a checkpoint's record)."""
    out = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = list(value) if isinstance(value, tuple) else value
    return out


def unflatten(flat: dict) -> dict:
    """{"a.b": 1} -> {"a": {"b": 1}}."""
    out: dict = {}
    for key, value in flat.items():
        *sections, name = key.split(".")
        node = out
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = value
    return out


# Fields that may change between a checkpoint and its resumed run without changing the training maths: those
# declared with maths=False (whole sections: `runtime`, `run`).
NON_MATHS_FIELDS = non_maths_paths(Config)


def maths_fields(config_dict: dict) -> dict:
    """The flattened fields that define the training maths (everything but output, resume and speed options)."""
    flat = flatten(upgrade(config_dict))
    return {k: v for k, v in flat.items() if is_maths(k)}


def is_maths(path: str) -> bool:
    """Is the field of this dotted name part of the training maths (not in a section or field declared otherwise)?"""
    return not any(path == p or path.startswith(p + ".") for p in NON_MATHS_FIELDS)


# Fields that set the networks' tensor shapes, with the options that set each: a run trained with other values cannot
# be continued at all, not even under --allow-config-change.
SHAPE_FIELDS = {
    "data.resolution": "--data (its resolution)",
    "data.aspect": "--data (its width and height)",
    "data.channels": "--data (its channels)",
    "data.label_dim": "--cond / --data (its labels)",
    "model.z_dim": "--cfg",
    "model.w_dim": "--cfg",
    "model.mapping_layers": "--cfg",
    "model.channel_base": "--cbase / --cfg",
    "model.channel_max": "--cmax / --cfg",
    "model.generator": "--cfg",
    "model.synthesis_layers": "--cfg",
    "model.group_channels": "--cfg",
    "model.blocks_per_stage": "--cfg",
    "model.g_arch": "--g-arch / --cfg",
    "model.d_arch": "--d-arch / --cfg",
    "model.g_attn": "--g-attn",
    "model.d_attn": "--d-attn",
    "model.grow": "--grow",
}


def config_hash(config: Config) -> str:
    """SHA-256 of the training-maths fields, stored in every checkpoint."""
    text = json.dumps(maths_fields(config.to_dict()), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def field_default(section, name: str):
    """The default of field `name` of a Config section dataclass (the one place it is written)."""
    return {field.name: field.default for field in dataclasses.fields(section)}[name]


def field_defaults() -> dict:
    """Flattened `section.field` -> default, for every Config field that has one."""
    return {
        f"{section}.{field.name}".lstrip("."): field.default
        for section, field in _fields(Config)
        if field.default is not dataclasses.MISSING
    }


def field_changes(old: dict, new: dict, keep=is_maths) -> list[tuple[str, object, object]]:
    """(dotted field, old value, new value) for each field that `keep` selects and that differs between two config
    dicts (nested or flattened, any layout `upgrade` reads), sorted by field. A field the old config does not have
    (it was added to ganforge later) counts as its default, which is what that older run trained with."""
    a, b = ({k: v for k, v in flatten(upgrade(d)).items() if keep(k)} for d in (old, new))
    a = {k: v for k, v in flatten(field_defaults()).items() if k in b} | a
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def maths_differences(old: dict, new: dict) -> list[str]:
    """Human-readable `field: old -> new` lines for the maths fields that differ (`field_changes`)."""
    return [f"{k}: {a!r} -> {b!r}" for k, a, b in field_changes(old, new)]


def lazy_ratio(interval: int) -> float:
    """Lazy regularisation runs every `interval` steps, so the optimiser sees interval+1 updates where it would see
    interval; lr and betas are corrected by this ratio (StyleGAN2 App. C)."""
    return interval / (interval + 1)

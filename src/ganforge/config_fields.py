"""Which fields of a `Config` define the training maths: the record a checkpoint keeps of them, its hash, and the
differences a resume reports. Output, resume and speed options are not maths: they may change between runs."""

import dataclasses
import hashlib
import json

from ganforge.config import Config

# Fields that may change between a checkpoint and its resumed run without changing the training maths.
NON_MATHS_FIELDS = frozenset({
    "data.path", "data.workers", "schedule.kimg", "schedule.tick_kimg", "schedule.snap", "schedule.batch_gpu",
    "precision.compile", "precision.channels_last", "precision.deterministic", "precision.device", "world_size",
})  # fmt: skip


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; tuples become lists, as they come back from JSON."""
    out = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = list(value) if isinstance(value, tuple) else value
    return out


def maths_fields(config_dict: dict) -> dict:
    """The flattened fields that define the training maths (everything but output, resume and speed options)."""
    flat = flatten(config_dict)
    return {k: v for k, v in flat.items() if not k.startswith("run.") and k not in NON_MATHS_FIELDS}


def config_hash(config: Config) -> str:
    """SHA-256 of the training-maths fields, stored in every checkpoint."""
    text = json.dumps(maths_fields(config.to_dict()), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _field_defaults() -> dict:
    """Flattened dataclass defaults of every config field that has one."""
    out = {}
    for section in dataclasses.fields(Config):
        for f in dataclasses.fields(section.type) if dataclasses.is_dataclass(section.type) else ():
            if f.default is not dataclasses.MISSING:
                out[f"{section.name}.{f.name}"] = list(f.default) if isinstance(f.default, tuple) else f.default
    return out


def maths_differences(old: dict, new: dict) -> list[str]:
    """Human-readable `field: old -> new` lines for the maths fields that differ. A field the old record lacks was
    added to ganforge after it was written, so it trained with that field's default."""
    b = maths_fields(new)
    a = {k: v for k, v in _field_defaults().items() if k in b} | maths_fields(old)
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]

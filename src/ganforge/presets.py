"""The preset table of `ganforge train --cfg`: every family's rows (its `families/<name>/traits.py`), family by
family. `ganforge.train.resolver` fills in what a row leaves to be derived and is the only reader. Like
`ganforge.config`, this module imports neither torch nor click (`ganforge --help` reads the preset names).
"""

from ganforge.families import FAMILIES

DEFAULT_PRESET = "auto"
PRESETS = {name: row for family in FAMILIES.values() for name, row in family.presets.items()}


def auto_batch(resolution: int, world_size: int) -> int:
    """The `auto` preset's global batch (Karras et al. 2020, App. D): 4096 / resolution images per process, at most
    32 per process and 64 in all, at least one per process."""
    return max(min(world_size * min(4096 // resolution, 32), 64), world_size)

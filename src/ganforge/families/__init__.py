"""Model families as units: each `families/<name>/` holds what ganforge knows of one family, and the rest of the code
asks its record (`family_of`) instead of testing the family's name.

    from ganforge.families import family_of
    if family_of(cfg.model.generator).grows: ...

Today a family's folder holds its record (`traits.py`: preset rows, variants, precisions, its description); its
networks, loss and readers live in `nets/`, `train/` and `interop/`, reached through the record's traits.
"""

from ganforge.families.preset import Preset
from ganforge.families.r3gan.traits import R3GAN
from ganforge.families.record import Family
from ganforge.families.stylegan2.traits import STYLEGAN2
from ganforge.families.stylegan3.traits import STYLEGAN3

FAMILIES = {family.name: family for family in (STYLEGAN2, STYLEGAN3, R3GAN)}
DEFAULT_GENERATOR = "stylegan2"  # ModelConfig.generator's default; files written before the field have it
GENERATORS = tuple(generator for family in FAMILIES.values() for generator in family.generators)
_BY_GENERATOR = {generator: family for family in FAMILIES.values() for generator in family.generators}

__all__ = [
    "DEFAULT_GENERATOR",
    "FAMILIES",
    "GENERATORS",
    "Family",
    "Preset",
    "family_of",
    "family_of_preset",
    "titles_where",
]


def family_of(generator: str) -> Family:
    """The family of a ModelConfig.generator value (one of GENERATORS)."""
    return _BY_GENERATOR[generator]


def family_of_preset(preset: Preset) -> Family:
    """The family a preset row trains."""
    return family_of(preset.generator or DEFAULT_GENERATOR)


def titles_where(trait) -> str:
    """The titles of the families for which `trait(family)` holds, for advice: "StyleGAN2 or StyleGAN3"."""
    return " or ".join(family.title for family in FAMILIES.values() if trait(family))

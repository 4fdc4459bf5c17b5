"""The options of `ganforge import`, each declared on the field it sets (`ganforge.option`); the command's click
options are derived from the declarations."""

import dataclasses

from ganforge.option import declared, option, refuse_bad_values

WHICH = ("G_ema", "G", "D")  # the networks of a source file an import can take


@dataclasses.dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """Which network of the source file `ganforge import` writes: a generator as a snapshot, D as a discriminator
    file."""

    which: str = option(
        "Options",
        "Network to take; D is written as a discriminator file for fine-tuning.",
        default="G_ema",
        choices=WHICH,
    )

    def __post_init__(self):
        refuse_bad_values(IMPORT_OPTIONS, self)


# Every option of `ganforge import`.
IMPORT_OPTIONS = declared(ImportOptions)

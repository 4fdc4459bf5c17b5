"""The options of `ganforge checkpoint diff`, each declared on the field it sets (`ganforge.option`); the command's
click options are derived from the declarations."""

import dataclasses

from ganforge.option import Range, declared, option, refuse_bad_values

MAX_SHOWN = 10**6  # differences printed: more than any reader goes through


@dataclasses.dataclass(frozen=True, kw_only=True)
class DiffOptions:
    """How `ganforge checkpoint diff` prints a comparison: at most `limit` of its differences, then their count."""

    limit: int = option(
        "Options", "Print at most this many differences.", default=50, range=Range(1, MAX_SHOWN, whole=True)
    )

    def __post_init__(self):
        refuse_bad_values(DIFF_OPTIONS, self)


# Every option of `ganforge checkpoint diff`.
DIFF_OPTIONS = declared(DiffOptions)

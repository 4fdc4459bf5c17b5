"""The options of `ganforge train`: the options declared on the Config fields (`ganforge.config`), the options that
set no single field, and `TrainOptions`, the typed options a command or a Python caller hands to `resolve`.

Imports only ganforge.option, ganforge.config and ganforge.presets, so `ganforge --help` stays fast. An option left
out is None (False for a switch): `ganforge.train.resolver.resolve` then takes the value from the preset, from the
default of its Config field, or derives it.
"""

from ganforge.config import Config
from ganforge.config.sections import CONTROLS, GRADIENT_NORM, HELP_SECTIONS, OUTPUT, POSITIVE, PRECISION
from ganforge.option import Declared, Option, declared, options_type

# Options that set no single Config field: a shorthand for two fields, and what the command itself checks or does.
CLIP_GRAD = Declared(
    "",
    Option(
        CONTROLS,
        "Cap the global gradient norm of G and D at this value (0.5 to 1 is usual).",
        flag="--clip-grad",
        kind=float,
        range=POSITIVE,
        must=GRADIENT_NORM,
        shown_default="off",
    ),
    None,
)
DRY_RUN = Declared("", Option(OUTPUT, "Print the resolved configuration and exit.", flag="--dry-run", kind=bool), None)
GPU_MEMORY = Declared(
    "",
    Option(
        PRECISION,
        "Plan for a GPU of this many GB: one step is traced before training (also with --dry-run, also on a CPU) and "
        "the run refused, naming the --batch-gpu that fits, when it needs more. On a GPU its free memory is checked "
        "without this option.",
        flag="--gpu-memory",
        kind=float,
        range=POSITIVE,
        shown_default="the GPU's free memory",
    ),
    None,
)

# Every option of `ganforge train`, in the order --help lists them: by section, then as declared.
TRAIN_OPTIONS = sorted(
    [*declared(Config), CLIP_GRAD, DRY_RUN, GPU_MEMORY], key=lambda d: HELP_SECTIONS.index(d.option.section)
)

TrainOptions = options_type(
    "TrainOptions",
    TRAIN_OPTIONS,
    """What the user asked `ganforge train` for, one field per option (the flag is the field name with dashes;
    `--cfg` is `preset`). None means "not given".""",
    module=__name__,
)

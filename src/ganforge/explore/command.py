"""The `ganforge generate` command line that writes the image a request returns, byte for byte: the options a request
was parsed into, written back through generate's own option declarations (only the flags whose values differ from
generate's defaults; its --device is where the image was made, since another device's kernels may round a pixel
differently)."""

import shlex

from ganforge.generate.options import GENERATE_OPTIONS, GenerateOptions
from ganforge.option import command_words


def generate_command(o: GenerateOptions) -> str:
    """The shell command that writes the file."""
    return shlex.join(["ganforge", "generate", *command_words(GENERATE_OPTIONS, o)])

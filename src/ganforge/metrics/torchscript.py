"""TorchScript files a user gives (NVlabs' VGG16 and Inception networks): loaded with torch.jit.load, which runs no
pickled Python, after the file is checked to be a regular file of a bounded size; the caller probes what it computes."""

import stat
import warnings
from pathlib import Path

import torch

from ganforge.errors import UserError


def load_user_script(path: str | Path, flag: str, max_bytes: int, fix: str, device) -> torch.jit.ScriptModule:
    """A TorchScript file the user gave with `flag`, on `device`: checked to be a regular file of at most `max_bytes`
    before it is opened, then loaded with torch.jit.load (which runs no pickled Python). UserError naming the flag, the
    file and `fix` (what file to pass) when it is not readable TorchScript; the caller probes what the network does."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as error:
        raise UserError(f"{flag} {path}: cannot be read ({error.strerror or 'no such file'}); {fix}") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        raise UserError(f"{flag} {path}: not a regular file of at most {max_bytes:,} bytes; {fix}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # deprecated TorchScript: the files exist in no other form
        try:
            return torch.jit.load(str(path), map_location=device).eval()
        except (RuntimeError, ValueError, OSError) as error:
            what = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
            raise UserError(f"{flag} {path}: not a TorchScript file ({what}); {fix}") from None

"""The options of `ganforge explore`, each declared on the field it sets (`ganforge.option`): the command's click
options and the value checks are derived from the declarations. Imports nothing heavy, so the CLI can take its
declarations from here."""

import dataclasses
from pathlib import Path

from ganforge.devices import DEVICE_CHOICES
from ganforge.errors import UserError
from ganforge.option import Range, declared, option, value_problems

SERVE = "Networks and server"  # the section of `ganforge explore --help`
MAX_PORT = 65535


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExploreOptions:
    """What `ganforge explore` serves (`networks`, files or run folders; `latents`, projected latents) and where:
    `host` and `port` (0: a free one); requests may also name the server by `allowed_hosts`."""

    networks: tuple[Path, ...] = option(
        SERVE,
        "Generator: a ganforge snapshot (.safetensors), an NVlabs pickle (.pkl), a rosinality checkpoint (.pt) or a "
        "run folder (its newest snapshot). Repeat it to see several networks side by side.",
        flag="--network",
        multiple=True,
        required=True,
    )
    latents: tuple[Path, ...] = option(
        SERVE,
        "A projected_w.npz as `ganforge project` writes it, or a folder of them (its .npz files and those of its "
        "folders, such as project's --outdir; listed again whenever the page asks): the page shows their rows as "
        "images and may move ws along one. Only these files are read; repeat the flag for several.",
        default=(),
        multiple=True,
        metavar="FILE_OR_FOLDER",
    )
    host: str = option(
        SERVE,
        "Address to listen on. Loopback (the default) serves this machine only: reach it from a laptop through an SSH "
        "tunnel. Any other address warns and requires the random token in the printed URL.",
        default="127.0.0.1",
    )
    port: int = option(SERVE, "Port; 0 picks a free one.", default=0, range=Range(0, MAX_PORT, whole=True))
    allowed_hosts: tuple[str, ...] = option(
        SERVE,
        "A host name the page may also be opened by (a reverse proxy's, a DNS name of this machine); repeat it for "
        "several. Requests naming any other host than the address served are refused (403), so that no web page can "
        "reach the server by pointing a name of its own at this address.",
        default=(),
        flag="--allowed-host",
        multiple=True,
    )
    device: str = option(SERVE, "Where to generate.", default="auto", choices=DEVICE_CHOICES)

    def check(self) -> None:
        """UserError listing each value its declaration does not accept."""
        problems = value_problems(EXPLORE_OPTIONS, self)
        if problems:
            raise UserError(*problems)


# Every option of `ganforge explore`, in the order of its fields.
EXPLORE_OPTIONS = declared(ExploreOptions)

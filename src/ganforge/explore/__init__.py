"""`ganforge explore` as an importable function:

    from ganforge.explore import serve
    serve([Path("ffhq.pkl")], host="127.0.0.1", port=0, device="auto")

The server's packages (starlette, uvicorn: the `explore` extra) are imported when `serve` runs, so the rest of
ganforge works without them.
"""

from ganforge.explore.options import ExploreOptions


def serve(sources, host: str, port: int, device: str, allowed_hosts: tuple[str, ...] = (), latents=()) -> None:
    """Serve the page for the networks `sources` (and the projected latents `latents`, files or folders) until
    interrupted; requests may name the server by the address it serves or by the host names `allowed_hosts` (see
    ganforge.explore.server). The values are checked as the command line's are."""
    from ganforge.explore.server import serve as run

    options = ExploreOptions(
        networks=tuple(sources), latents=tuple(latents), host=host, port=port, device=device,
        allowed_hosts=allowed_hosts,
    )  # fmt: skip
    options.check()
    run(list(options.networks), options.host, options.port, options.device, tuple(options.allowed_hosts),
        options.latents)  # fmt: skip


__all__ = ["ExploreOptions", "serve"]

"""`ganforge explore` as an importable function:

    from ganforge.explore import serve
    serve([Path("ffhq.pkl")], host="127.0.0.1", port=0, device="auto")

The server's packages (starlette, uvicorn: the `explore` extra) are imported when `serve` runs, so the rest of
ganforge works without them.
"""


def serve(sources, host: str, port: int, device: str, allowed_hosts: tuple[str, ...] = ()) -> None:
    """Serve the page for the networks `sources` until interrupted; requests may name the server by the address it
    serves or by the host names `allowed_hosts` (see ganforge.explore.server)."""
    from ganforge.explore.server import serve as run

    run(sources, host, port, device, tuple(allowed_hosts))


__all__ = ["serve"]

"""The ASGI application of `ganforge explore`: the page and its three files, the networks' descriptions, the latent
files it may read, and one endpoint per kind of image. All state (networks, latent files, device, cache, render lock)
lives in one Explorer.

Every image request is parsed into the options of the `ganforge generate` command that makes it (queries.py) and
made by generate's own code in memory (generate/inmemory.py), so its bytes are that command's file; the command is
sent with it (X-Ganforge-Command, X-Ganforge-File) for the page to show beside its download link. What no command
writes (feature maps, a spectrum) comes with the command that writes the image it is made from, named as such
(X-Ganforge-Image-Command, X-Ganforge-Image-File). How long the render took is sent as Server-Timing.
"""

import importlib.resources
import threading
import time
import urllib.parse

import torch
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ganforge.errors import UserError
from ganforge.explore.cache import ResponseCache
from ganforge.explore.command import generate_command
from ganforge.explore.features import layer_output, strip_png, zoom_png
from ganforge.explore.latents import NO_LATENTS, LatentFiles
from ganforge.explore.networks import Network
from ganforge.explore.queries import ENDPOINT_PARAMETERS, BadRequest, Query, parse_query
from ganforge.explore.spectrum import spectrum_png
from ganforge.generate.inmemory import files_in_memory, key_image
from ganforge.generate.writers import png_bytes

PAGE_FILES = {"/": ("index.html", "text/html"), "/explore.js": ("explore.js", "text/javascript"),
              "/explore.css": ("explore.css", "text/css")}  # fmt: skip
MAX_PARAMETERS = 32  # every parameter an endpoint takes, with room to spare
MEDIA_TYPES = {".png": "image/png", ".webp": "image/webp", ".gif": "image/gif"}


class Explorer:
    """The server's state: the loaded networks, the latent files, the device they run on, the cache, and a lock that
    lets one request at a time use the networks (torch modules are not shared between threads)."""

    def __init__(self, networks: list[Network], device: torch.device, latents: LatentFiles = NO_LATENTS):
        self.networks, self.device = networks, device
        self.latents = latents
        self.cache = ResponseCache()
        self.render_lock = threading.Lock()
        static = importlib.resources.files("ganforge.explore") / "static"
        self.page_files = {path: (static / name).read_bytes() for path, (name, _) in PAGE_FILES.items()}

    def answer(self, endpoint: str, pairs: list[tuple[str, str]]) -> tuple[bytes, dict]:
        """(body, headers) of an image request; BadRequest or UserError for what cannot be made."""
        files = [network.file for network in self.networks]
        query = parse_query(endpoint, pairs, files, self.device.type, self.latents)
        key = (endpoint, query)
        cached = self.cache.get(key)
        if cached is not None:
            body, headers = cached
            return body, headers | {"Server-Timing": 'cache;desc="from the cache"'}
        with self.render_lock:
            began = time.perf_counter()
            body, file = self._render(endpoint, query)
            milliseconds = (time.perf_counter() - began) * 1000
        headers = {"X-Ganforge-File": file, "Cache-Control": "no-store"}  # the cache is behind the guards
        command = generate_command(query.options)
        if endpoint in ("layer", "spectrum"):  # no command writes these: the one that writes their image, named so
            shown = f"{query.layer}-c{query.channel}" if query.channel is not None else query.layer
            made = f"{shown if endpoint == 'layer' else 'spectrum'}-{file}"
            headers |= {"X-Ganforge-File": made, "X-Ganforge-Image-File": file, "X-Ganforge-Image-Command": command}
        else:
            headers["X-Ganforge-Command"] = command  # it writes this very file
        self.cache.put(key, body, headers)
        return body, headers | {"Server-Timing": f"render;dur={milliseconds:.1f}"}

    def _render(self, endpoint: str, query: Query) -> tuple[bytes, str]:
        """(the body, the file of generate's output it is or is made from)."""
        network = self.networks[query.net]
        if endpoint in ("grid", "mix", "interp"):
            return files_in_memory(network.G, query.options, self.device)[query.file], query.file
        if endpoint == "layer":
            if query.layer not in network.layers():
                raise BadRequest(f"layer={query.layer[:60]}: not a layer of network {query.net}; one of /api/networks'")
            file, maps = layer_output(network.G, query.options, query.key, query.layer)
            if query.channel is None:
                return strip_png(maps, query.channels), file
            return zoom_png(maps, query.channel, query.layer), file
        file, pixels = key_image(network.G, query.options, query.key, self.device)
        return (spectrum_png(pixels) if endpoint == "spectrum" else png_bytes(pixels)), file

    def describe(self) -> list[dict]:
        return [network.describe(index) for index, network in enumerate(self.networks)]


def build_app(explorer: Explorer):
    """The ASGI app serving `explorer` (the server puts guards.py's checks before it)."""

    def page(request):
        path = request.url.path
        return Response(explorer.page_files[path], media_type=PAGE_FILES[path][1])

    def networks(request):
        return JSONResponse(explorer.describe())

    def latents(request):
        return JSONResponse(list(explorer.latents.listed()))

    def image(request):
        endpoint = request.path_params["endpoint"]
        if endpoint not in ENDPOINT_PARAMETERS:
            return PlainTextResponse(f"/api/{endpoint[:40]}: no such endpoint", 404)
        try:
            pairs = urllib.parse.parse_qsl(request.url.query, keep_blank_values=True, max_num_fields=MAX_PARAMETERS)
        except ValueError:
            return PlainTextResponse(f"more than {MAX_PARAMETERS} query parameters; give each one once", 400)
        try:
            body, headers = explorer.answer(endpoint, pairs)
        except UserError as error:  # every problem with the request, BadRequest or generate's own refusals
            return PlainTextResponse("\n".join(error.problems), 400)
        media_type = MEDIA_TYPES["." + headers["X-Ganforge-File"].rsplit(".", 1)[1]]
        return Response(body, media_type=media_type, headers=headers)

    routes = [Route(path, page) for path in PAGE_FILES]
    routes += [Route("/api/networks", networks), Route("/api/latents", latents), Route("/api/{endpoint}", image)]
    return Starlette(routes=routes)

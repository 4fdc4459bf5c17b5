"""The ASGI application of `ganforge explore`: the page and its three files, the networks' descriptions, and one
endpoint per kind of image. All state (networks, device, cache, render lock) lives in one Explorer.

Every image request is parsed into the options of the `ganforge generate` command that makes it (queries.py) and
made by generate's own code in memory (generate/inmemory.py), so its bytes are that command's file; the command is
sent with it (X-Ganforge-Command, X-Ganforge-File) for the page to show beside its download link.
"""

import importlib.resources
import threading
import urllib.parse

import torch
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ganforge.errors import UserError
from ganforge.explore.cache import ResponseCache
from ganforge.explore.command import generate_command
from ganforge.explore.features import feature_maps_png
from ganforge.explore.networks import Network
from ganforge.explore.queries import ENDPOINT_PARAMETERS, BadRequest, Query, parse_query
from ganforge.generate.inmemory import files_in_memory

PAGE_FILES = {"/": ("index.html", "text/html"), "/explore.js": ("explore.js", "text/javascript"),
              "/explore.css": ("explore.css", "text/css")}  # fmt: skip
MAX_PARAMETERS = 32  # every parameter an endpoint takes, with room to spare
MEDIA_TYPES = {".png": "image/png", ".webp": "image/webp", ".gif": "image/gif"}


class Explorer:
    """The server's state: the loaded networks, the device they run on, the cache, and a lock that lets one request
    at a time use the networks (torch modules are not shared between threads)."""

    def __init__(self, networks: list[Network], device: torch.device):
        self.networks, self.device = networks, device
        self.cache = ResponseCache()
        self.render_lock = threading.Lock()
        static = importlib.resources.files("ganforge.explore") / "static"
        self.page_files = {path: (static / name).read_bytes() for path, (name, _) in PAGE_FILES.items()}

    def answer(self, endpoint: str, pairs: list[tuple[str, str]]) -> tuple[bytes, dict]:
        """(body, headers) of an image request; BadRequest or UserError for what cannot be made."""
        files = [network.file for network in self.networks]
        query = parse_query(endpoint, pairs, files, self.device.type)
        key = (endpoint, query)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        with self.render_lock:
            body = self._render(query)
        headers = {"X-Ganforge-File": query.file, "Cache-Control": "no-store"}  # the cache is behind the guards
        if query.layer is None:
            headers["X-Ganforge-Command"] = generate_command(query.options)  # it writes this very file
        else:  # no command writes feature maps: the one that writes the image they come from, and that file's name
            headers |= {"X-Ganforge-File": f"{query.layer}-{query.file}", "X-Ganforge-Image-File": query.file,
                        "X-Ganforge-Image-Command": generate_command(query.options)}  # fmt: skip
        self.cache.put(key, body, headers)
        return body, headers

    def _render(self, query: Query) -> bytes:
        network = self.networks[query.net]
        if query.layer is None:
            return files_in_memory(network.G, query.options, self.device)[query.file]
        if query.layer not in network.layers():
            raise BadRequest(f"layer={query.layer[:60]}: not a layer of network {query.net}; one of /api/networks'")
        return feature_maps_png(network.G, query.options, query.layer, query.channels)

    def describe(self) -> list[dict]:
        return [network.describe(index) for index, network in enumerate(self.networks)]


def build_app(explorer: Explorer):
    """The ASGI app serving `explorer` (the server puts guards.py's checks before it)."""

    def page(request):
        path = request.url.path
        return Response(explorer.page_files[path], media_type=PAGE_FILES[path][1])

    def networks(request):
        return JSONResponse(explorer.describe())

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
    routes += [Route("/api/networks", networks), Route("/api/{endpoint}", image)]
    return Starlette(routes=routes)

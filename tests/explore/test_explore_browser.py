"""`ganforge explore` in a real headless Chromium: the page shows what the API returns as the truncation slider moves,
a seed is picked from the grid, a style mix, an interpolation and feature maps are asked for, and two networks are put
side by side; its screenshot is not blank. A row of a latent file, a w moved along a direction, a free style-mixing
range, an enlarged channel and the spectrum show what the API returns too, each with its render time. Skipped, with
the reason, without Chromium or Playwright (CI installs both: .ci/run and the dev extra).

The docs' picture (docs/explore.png) is of trained networks: benchmarks/explore_screenshot.py takes it."""

import io
import re
import urllib.parse
from pathlib import Path

import numpy as np
import PIL.Image
import pytest
from explore_helpers import explore_server, fetch, tiny_networks

from ganforge.projected import write_projected_w

CHROMIUM = Path("/usr/bin/chromium")
# Chromium in a container, offline: no sandbox (no user namespaces), no GPU, nothing fetched in the background
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
WAIT_MS = 30_000

sync_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright: pip install playwright")
if not CHROMIUM.exists():
    pytest.skip(f"needs Chromium at {CHROMIUM}: apt-get install -y chromium", allow_module_level=True)


@pytest.fixture(scope="module")
def latent_file(tmp_path_factory):
    """A projected_w.npz of two rows of the tiny StyleGAN2's ws (6 x 8), alone in its folder."""
    folder = tmp_path_factory.mktemp("explore-latents")
    write_projected_w(folder / "two.npz", np.random.default_rng(0).standard_normal((2, 6, 8)))
    return folder / "two.npz"


@pytest.fixture(scope="module")
def server(tmp_path_factory, latent_file):
    nets = tiny_networks(tmp_path_factory.mktemp("explore-browser"))
    args = ("--network", str(nets["sg2"]), "--network", str(nets["sg2b"]), "--latents", str(latent_file.parent))
    with explore_server(*args) as (url, _):
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1100, "height": 820},
        )  # fmt: skip
        yield context
        context.close()


@pytest.fixture(scope="module")
def page(browser, server):
    page = browser.new_page()
    page.goto(server)
    _wait_shown(page, 0, "seed=0")
    return page


def _wait_shown(page, net: int, *parts: str) -> bytes:
    """Waits until network `net`'s card shows an image whose request has every one of `parts`; its bytes."""
    card = f'figure[data-net="{net}"]'
    page.wait_for_function(
        """([card, parts]) => {
            const figure = document.querySelector(card);
            const url = figure && figure.querySelector("img.shown").dataset.url;
            return figure.dataset.state === "ready" && url && parts.every((part) => url.includes(part));
        }""",
        arg=[card, list(parts)],
        timeout=WAIT_MS,
    )
    shown = page.evaluate(
        """async (card) => {
            const img = document.querySelector(card + " img.shown");
            const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
            return Array.from(bytes);
        }""",
        card,
    )
    return bytes(shown)


def _api(server: str, endpoint: str, **params) -> bytes:
    status, _, body = fetch(f"{server}api/{endpoint}?{urllib.parse.urlencode(params)}")
    assert status == 200, body
    return body


def _set(page, selector: str, value) -> None:
    """Sets a control's value as a user would, with the input event the page listens to."""
    page.eval_on_selector(
        selector, "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); }", str(value)
    )


def test_the_truncation_slider_and_a_seed_picked_from_the_grid_show_what_the_api_returns(page, server):
    first = _wait_shown(page, 0, "seed=0")
    assert first == _api(server, "image", net=0, seed=0, **{"class": 0})
    _set(page, "#trunc", 0.5)
    moved = _wait_shown(page, 0, "trunc=0.5", "seed=0")
    assert moved == _api(server, "image", net=0, seed=0, trunc=0.5, **{"class": 0}) and moved != first
    box = page.locator("#grid").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 2.5 / 4, box["y"] + box["height"] * 1.5 / 4)  # row 1, column 2
    assert page.input_value("#seed") == "6"
    assert _wait_shown(page, 0, "seed=6", "trunc=0.5") == _api(
        server, "image", net=0, seed=6, trunc=0.5, **{"class": 0}
    )
    command = page.locator('figure[data-net="0"] .command').inner_text()
    assert command.endswith("--seeds 6 --trunc 0.5 --class 0")
    assert page.locator('figure[data-net="0"] .download').get_attribute("download") == "seed0000006.png"


def test_paging_the_grid_shows_the_next_seeds(page, server):
    page.click("#next")
    page.wait_for_function("document.querySelector('#grid').dataset.url.includes('page=1')", timeout=WAIT_MS)
    assert page.inner_text("#page-label") == "page 1"
    page.click("#prev")
    page.wait_for_function("document.querySelector('#grid').dataset.url.includes('page=0')", timeout=WAIT_MS)


def test_a_style_mix_an_interpolation_and_feature_maps_show_what_the_api_returns(page, server):
    _set(page, "#source", 9)
    page.check("input[name=view][value=mix]")
    mixed = _wait_shown(page, 0, "api/mix", "source=9")
    params = dict(net=0, seed=6, source=9, trunc=0.5, **{"class": 0})
    assert mixed == _api(server, "mix", **params, **{"mix-layers": "0-3"})  # the coarse styles: ws 0-3
    page.check("input[name=view][value=interp]")
    loop = _wait_shown(page, 0, "api/interp")
    assert loop == _api(server, "interp", net=0, seeds="0,1,2", interp=24, trunc=0.5, **{"class": 0})
    page.check("input[name=view][value=layer]")
    page.select_option("#layer", "b8.conv1")
    maps = _wait_shown(page, 0, "api/layer", "layer=b8.conv1")
    assert maps == _api(server, "layer", net=0, seed=6, layer="b8.conv1", channels=8, trunc=0.5, **{"class": 0})
    page.check("input[name=view][value=image]")


def test_every_network_given_is_shown_at_start(browser, server):
    """With two --network, both cards show at start (only the first was ticked, the second hidden)."""
    fresh = browser.new_page()
    fresh.goto(server)
    assert fresh.is_checked("#net-0") and fresh.is_checked("#net-1")
    _wait_shown(fresh, 1, "net=1", "seed=0")
    fresh.close()


def test_two_networks_side_by_side_and_a_screenshot_that_is_not_blank(page, server, tmp_path):
    page.check("#net-1")
    second = _wait_shown(page, 1, "net=1", "seed=6")
    assert second == _api(server, "image", net=1, seed=6, trunc=0.5, **{"class": 0})
    assert second != _wait_shown(page, 0, "seed=6")
    shot = tmp_path / "explore.png"
    page.screenshot(path=str(shot))
    pixels = np.asarray(PIL.Image.open(io.BytesIO(shot.read_bytes())).convert("L"), dtype=np.float64)
    assert pixels.std() > 10 and len(np.unique(pixels)) > 50, "the screenshot is blank"


def test_a_latent_row_a_moved_w_a_free_mix_range_a_zoomed_channel_and_the_spectrum_show_what_the_api_returns(
    page, server, latent_file
):
    latent = str(latent_file)
    for control, value in (("#seed", 6), ("#trunc", 0.5), ("#source", 9)):  # as the tests before leave them
        _set(page, control, value)
    assert page.is_hidden("#row") and page.is_hidden("#edit-seed")  # shown only for a latent file, an edit's kind
    page.select_option("#latent", latent)
    _set(page, "#row", 1)
    row = _wait_shown(page, 0, "api/image", "latent=", "row=1")
    assert row == _api(server, "image", net=0, latent=latent, row=1)
    assert "--batch 1 --projected-w" in page.locator('figure[data-net="0"] .command').inner_text()
    assert page.locator('figure[data-net="0"] .download').get_attribute("download") == "proj01.png"
    timing = page.locator('figure[data-net="0"] .timing').inner_text()
    assert re.fullmatch(r"rendered in [0-9.]+ ms on the server|from the server's cache", timing), timing
    page.select_option("#latent", "")
    page.select_option("#edit-kind", "seed")
    _set(page, "#edit-seed", 3)
    _set(page, "#edit-amount", 2)
    moved = _wait_shown(page, 0, "api/image", "edit-seed=3", "edit-amount=2")
    params = dict(net=0, seed=6, trunc=0.5, **{"class": 0, "edit-seed": 3, "edit-amount": 2})
    assert moved == _api(server, "image", **params) != _api(server, "image", net=0, seed=6, trunc=0.5, **{"class": 0})
    page.select_option("#edit-kind", "")
    page.check("input[name=view][value=mix]")
    page.select_option("#group", "custom")
    _set(page, "#mix-from", 2)
    _set(page, "#mix-to", 4)
    mixed = _wait_shown(page, 0, "api/mix", "mix-layers=2-4")
    assert mixed == _api(server, "mix", net=0, seed=6, source=9, trunc=0.5, **{"class": 0, "mix-layers": "2-4"})
    page.check("input[name=view][value=layer]")
    page.select_option("#layer", "b8.conv1")
    _set(page, "#channel", 1)
    zoomed = _wait_shown(page, 0, "api/layer", "channel=1")
    assert zoomed == _api(server, "layer", net=0, seed=6, trunc=0.5, layer="b8.conv1", channels=8, channel=1,
                          **{"class": 0})  # fmt: skip
    assert PIL.Image.open(io.BytesIO(zoomed)).size == (256, 256)
    _set(page, "#channel", "")
    page.check("input[name=view][value=spectrum]")
    spectrum = _wait_shown(page, 0, "api/spectrum", "seed=6")
    assert spectrum == _api(server, "spectrum", net=0, seed=6, trunc=0.5, **{"class": 0})
    assert (
        page.locator('figure[data-net="0"] .command')
        .inner_text()
        .startswith("the spectrum (made here) of seed0000006.png, which this writes: ganforge generate")
    )
    page.check("input[name=view][value=image]")

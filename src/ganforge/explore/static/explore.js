// The page of `ganforge explore`: controls -> one API URL per shown image; every image is fetched, shown from its
// bytes, and offered for download with the `ganforge generate` command that writes the same file, and with the time
// the server took to render it.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const $ = (id) => document.getElementById(id);
const GRID_ROWS = 4, GRID_COLS = 4;  // a seed page
let networks = [];
let page = 0;
const cards = new Map();  // network index -> Loader of its view

function apiUrl(endpoint, params) {
  const query = new URLSearchParams(params);
  if (token) query.set("token", token);
  return `api/${endpoint}?${query}`;
}

// Shows the image of the latest URL asked for in `img`; while a request runs, later ones wait and only the newest of
// them is sent (a dragged slider sends as fast as the server answers, never a backlog).
class Loader {
  constructor(img, box) {
    this.img = img;
    this.box = box;  // carries data-state (loading | ready | error) for people and tests
    this.wanted = null;
    this.shown = null;
    this.busy = false;
  }

  request(url) {
    this.wanted = url;
    if (!this.busy) this.pump();
  }

  async pump() {
    this.busy = true;
    while (this.wanted !== this.shown) {
      const url = this.wanted;
      this.box.dataset.state = "loading";
      try {
        const response = await fetch(url);
        if (!response.ok) throw new Error(await response.text());
        const blob = await response.blob();
        const old = this.img.src;
        this.img.src = URL.createObjectURL(blob);
        await this.img.decode();
        if (old.startsWith("blob:")) URL.revokeObjectURL(old);
        this.img.dataset.url = url;
        this.onShown(response, this.img.src);
        this.error = null;
      } catch (error) {
        this.error = String(error.message || error);
      }
      this.shown = url;
    }
    this.busy = false;
    this.onDone(this.error);
    this.box.dataset.state = this.error ? "error" : "ready";
  }

  onShown(response, blobUrl) {}
  onDone(error) { $("status").textContent = error || ""; }
}

class Card extends Loader {
  constructor(net) {
    const figure = $("view-card").content.firstElementChild.cloneNode(true);
    super(figure.querySelector(".shown"), figure);
    figure.dataset.net = net.index;
    figure.querySelector(".name").textContent = `${net.index}: ${net.name} (${net.width}x${net.height})`;
    this.figure = figure;
  }

  onShown(response, blobUrl) {
    const link = this.figure.querySelector(".download");
    link.href = blobUrl;
    link.download = response.headers.get("X-Ganforge-File");
    link.textContent = `download ${link.download}`;
    const image = response.headers.get("X-Ganforge-Image-Command");  // feature maps: no command writes them
    const what = view() === "spectrum" ? "the spectrum" : "feature maps";
    this.figure.querySelector(".command").textContent = image
      ? `${what} (made here) of ${response.headers.get("X-Ganforge-Image-File")}, which this writes: ${image}`
      : response.headers.get("X-Ganforge-Command");
    this.figure.querySelector(".timing").textContent = renderTime(response.headers.get("Server-Timing") || "");
  }

  onDone(error) {
    const box = this.figure.querySelector(".error");
    box.hidden = !error;
    box.textContent = error || "";
  }
}

// "render;dur=12.5" -> "rendered in 12.5 ms on the server"; a cached answer says so
function renderTime(timing) {
  const match = /^render;dur=([0-9.]+)/.exec(timing);
  if (match) return `rendered in ${match[1]} ms on the server`;
  return timing.startsWith("cache") ? "from the server's cache" : "";
}

function selected() {
  return networks.filter((net) => $(`net-${net.index}`).checked);
}

function view() {
  return document.querySelector("input[name=view]:checked").value;
}

// generate's options for the latents, as query parameters; only what this network can take is sent. The ws of a
// latent file are used as they are: no truncation, class or label.
function latentParams(net, fromFile = false) {
  const params = { net: net.index };
  if ($("noise-mode").value !== "const") params["noise-mode"] = $("noise-mode").value;
  if (!fromFile && net.w_space && $("trunc").value !== "1") params.trunc = $("trunc").value;
  if (!fromFile && net.w_space && $("cutoff").value !== "0") {
    params["trunc-cutoff"] = Math.min($("cutoff").value, net.num_ws);
  }
  if (!fromFile && net.c_dim > 0) {
    if ($("label").value.trim()) params.label = $("label").value.trim();
    else params.class = Math.min($("class").value, net.c_dim - 1);
  }
  if (net.stylegan3) {
    if ($("tx").value !== "0" || $("ty").value !== "0") params.translate = `${$("tx").value},${$("ty").value}`;
    if ($("rotate").value !== "0") params.rotate = $("rotate").value;
  }
  return params;
}

// One image: a seed or a row of a latent file, its ws moved when an edit is chosen and the amount is not 0
function oneImageParams(net) {
  const latent = $("latent").value;
  const params = latent ? { ...latentParams(net, true), latent, row: $("row").value }
                        : { ...latentParams(net), seed: $("seed").value };
  const kind = $("edit-kind").value;
  if (kind && net.w_space && $("edit-amount").value !== "0") {
    params[`edit-${kind}`] = $(`edit-${kind}`).value;
    params["edit-amount"] = $("edit-amount").value;
    if ($("edit-layers").value.trim()) params["edit-layers"] = $("edit-layers").value.trim();
  }
  return params;
}

// The ws a style mix takes from the source: a group's, or any range from-to
function mixLayers(net) {
  if ($("group").value === "custom") return `${$("mix-from").value}-${$("mix-to").value}`;
  return net.style_groups[$("group").value] || $("group").value;
}

function viewUrl(net) {
  const params = latentParams(net);
  const seed = $("seed").value;
  switch (view()) {
    case "mix":
      return apiUrl("mix", { ...params, seed, source: $("source").value, "mix-layers": mixLayers(net) });
    case "interp":
      return apiUrl("interp", { ...params, seeds: $("seeds").value, interp: $("frames").value });
    case "layer": {
      const layer = { layer: $("layer").value, channels: $("channels").value };
      if ($("channel").value !== "") layer.channel = $("channel").value;
      return apiUrl("layer", { ...oneImageParams(net), ...layer });
    }
    case "spectrum":
      return apiUrl("spectrum", oneImageParams(net));
    default:
      return apiUrl("image", oneImageParams(net));
  }
}

function update() {
  $("trunc-value").textContent = $("trunc").value;
  $("cutoff-value").textContent = $("cutoff").value === "0" ? "all" : $("cutoff").value;
  for (const id of ["tx", "ty", "rotate", "edit-amount"]) $(`${id}-value`).textContent = $(id).value;
  for (const panel of document.querySelectorAll("[data-edit]")) panel.hidden = panel.dataset.edit !== $("edit-kind").value;
  for (const panel of document.querySelectorAll("[data-latent]")) panel.hidden = !$("latent").value;
  $("mix-range").hidden = $("group").value !== "custom";
  $("page-label").textContent = `page ${page}`;
  for (const panel of document.querySelectorAll("[data-for]")) panel.hidden = panel.dataset.for !== view();
  const shown = selected();
  for (const net of shown) cards.get(net.index).request(viewUrl(net));
  if (shown.length) gridLoader.request(apiUrl("grid", { ...latentParams(shown[0]), page, grid: `${GRID_ROWS}x${GRID_COLS}` }));
}

function layoutCards() {
  const views = $("views");
  views.replaceChildren(...selected().map((net) => cards.get(net.index).figure));
  const first = selected()[0] || networks[0];
  fill($("layer"), first.layers);
  const groups = Object.keys(first.style_groups);
  fill($("group"), groups.length ? [...groups, "custom"] : [first.default_mix]);
  for (const id of ["mix-from", "mix-to"]) $(id).max = first.num_ws - 1;
  $("edit-dim").max = Math.max(0, first.w_dim - 1);
  update();
}

function fill(select, values) {
  const keep = select.value;
  select.replaceChildren(...values.map((value) => new Option(value, value)));
  if (values.includes(keep)) select.value = keep;
}

function pickFromGrid(event) {
  const box = $("grid").getBoundingClientRect();
  const col = Math.min(GRID_COLS - 1, Math.floor(((event.clientX - box.left) / box.width) * GRID_COLS));
  const row = Math.min(GRID_ROWS - 1, Math.floor(((event.clientY - box.top) / box.height) * GRID_ROWS));
  $("seed").value = page * GRID_ROWS * GRID_COLS + row * GRID_COLS + col;
  $("latent").value = "";  // a seed picked is the image's latent again
  update();
}

function buildControls() {
  const list = $("networks");
  for (const net of networks) {
    const label = document.createElement("label");
    const box = Object.assign(document.createElement("input"), { type: "checkbox", id: `net-${net.index}` });
    box.checked = true;  // every --network given is shown at start: the user asked to see them side by side
    box.addEventListener("change", layoutCards);
    label.append(box, ` ${net.index}: ${net.name}`);
    list.append(label);
    cards.set(net.index, new Card(net));
  }
  const classes = Math.max(...networks.map((net) => net.c_dim));
  $("conditioning").hidden = classes === 0;
  fill($("class"), [...Array(classes).keys()].map(String));
  $("moves").hidden = !networks.some((net) => net.stylegan3);
  $("cutoff").max = Math.max(...networks.map((net) => net.num_ws));
  for (const element of document.querySelectorAll("#controls input, #controls select")) {
    if (!element.id.startsWith("net-")) element.addEventListener("input", update);
  }
  $("prev").addEventListener("click", () => { page = Math.max(0, page - 1); update(); });
  $("next").addEventListener("click", () => { page += 1; update(); });
  $("grid").addEventListener("click", pickFromGrid);
  $("relist").addEventListener("click", listLatents);
}

// The --latents files, as the server lists them now (the only names it accepts)
async function listLatents() {
  const names = await (await fetch(apiUrl("latents", {}))).json();
  const keep = $("latent").value;
  $("latent").replaceChildren(new Option("the seed below", ""), ...names.map((name) => new Option(name, name)));
  $("latent").value = names.includes(keep) ? keep : "";
  fill($("edit-file"), names);
  $("edit-kind").querySelector("option[value=file]").disabled = names.length === 0;
  update();
}

const gridLoader = new Loader($("grid"), $("grid"));

fetch(apiUrl("networks", {}))
  .then((response) => response.json())
  .then((described) => {
    networks = described;
    buildControls();
    layoutCards();
    return listLatents();
  })
  .catch((error) => { $("status").textContent = `cannot reach the server: ${error}`; });

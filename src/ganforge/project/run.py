"""`ganforge project`: real images into a generator's latent space, each target's files in OUTDIR/<its name>/.

Everything that can be refused is checked before the first step: the options, the network and its class, every
target image, the perceptual network, and every file to be written; so a refusal leaves nothing behind, and a run
that has started only fails on what happens during it (a full disk).
"""

import math
import time
from pathlib import Path

import numpy as np
import torch

from ganforge import outputs as folders
from ganforge.devices import pick_device
from ganforge.errors import UserError
from ganforge.generate import writers
from ganforge.generate.labels import shown_names
from ganforge.interop import load_network
from ganforge.metrics.features import position_seed
from ganforge.metrics.perceptual import load_perceptual
from ganforge.metrics.shapes import aspect
from ganforge.progress import Stage
from ganforge.project import outputs, quality, search, tune
from ganforge.project.options import VIDEO_SIZE, ProjectOptions
from ganforge.project.targets import load_targets


def project(options: ProjectOptions) -> dict:
    """Everything `ganforge project` does; returns {"targets": [per-target summaries], "seconds_per_step",
    "device"}. The same options give the same files on the same machine."""
    options.check()
    device = pick_device(options.device)
    folders.check_writable_folder(options.outdir, "--outdir")
    G, _meta = load_network(options.network, device=device)
    G = G.eval().requires_grad_(False)
    c = _class_vector(G, options.class_index, device)
    targets = load_targets(options.targets, G.resolution, G.img_channels, aspect(G))
    video = writers.animation_format("auto") if options.video else None
    for target in options.targets:
        outputs.check_destinations(options.target_folder(target), options.tune_g > 0, video)
    features = load_perceptual(options.perceptual, device, options.inception)
    summaries, started, steps_done = [], time.monotonic(), 0
    for first in range(0, len(targets), options.batch):
        indices = list(range(first, min(first + options.batch, len(targets))))
        result = _search(G, targets[indices], features, options, c, indices, len(targets))
        steps_done += options.steps
        for j, index in enumerate(indices):
            summaries.append(_finish(G, targets[index], result, j, index, features, options, c, video))
    seconds = time.monotonic() - started
    return {"targets": summaries, "seconds_per_step": seconds / max(steps_done, 1), "device": str(device)}


def _class_vector(G, class_index: int | None, device) -> torch.Tensor:
    """One-hot c [1, c_dim] for a conditional network, [1, 0] for an unconditional one."""
    c = torch.zeros([1, G.c_dim], device=device)
    if G.c_dim == 0:
        if class_index is not None:
            raise UserError("--class: the network is unconditional; drop --class")
        return c
    space = getattr(G, "label_space", None)  # what a ganforge run recorded of its labels
    if space is not None and space["kind"] == "vectors":
        raise UserError(
            f"--class: the network takes label vectors of {G.c_dim} numbers{shown_names(space)}, not classes; "
            "ganforge project conditions on a class only"
        )
    if class_index is None or class_index >= G.c_dim:
        given = "" if class_index is None else f" ({class_index} is not one)"
        raise UserError(f"--class: the network is conditional on {G.c_dim} classes{given}; name the targets' class")
    c[0, class_index] = 1
    return c


def _generator(options: ProjectOptions, index: int) -> torch.Generator:
    """Target `index`'s own random stream: its projection does not depend on the targets batched with it."""
    return torch.Generator().manual_seed(position_seed(options.seed, "project", index))


def _search(G, targets, features, options: ProjectOptions, c, indices: list[int], total: int) -> search.Projection:
    which = f" {indices[0] + 1}" if len(indices) == 1 else f"s {indices[0] + 1}-{indices[-1] + 1}"
    what = f"project: target{which} of {total}"
    on_cpu = next(G.parameters()).device.type == "cpu"
    faster = "--perceptual none (pixel distances) is several times faster on a CPU" if on_cpu else ""
    with Stage(what, options.steps, unit="step", faster=faster if options.perceptual == "inception" else "") as stage:
        return search.project(
            G,
            targets,
            features,
            space=options.space,
            steps=options.steps,
            c=c,
            generators=[_generator(options, i) for i in indices],
            keep_history=options.video,
            stage=stage,
        )


def _finish(G, target, result, j: int, index: int, features, options: ProjectOptions, c, video) -> dict:
    """Tune (with --tune-g) and write one target's files; -> its summary."""
    folder = options.target_folder(options.targets[index])
    folder.mkdir(parents=True, exist_ok=True)
    ws, noise = result.ws[j : j + 1], {name: value[j : j + 1] for name, value in result.noise.items()}
    target_hwc = target.permute(1, 2, 0).numpy()
    projected = writers.hwc(search.render(G, ws, noise).cpu())[0]
    tuned = _tune(G, ws, noise, target, features, options, c, index) if options.tune_g else None
    tuned_hwc = None if tuned is None else writers.hwc(search.render(tuned.G, ws, noise).cpu())[0]
    outputs.write_latent(folder, ws, noise)
    outputs.write_images(folder, target_hwc, projected, tuned_hwc)
    record = _record(options, index, result.distances[:, j], target_hwc, projected, tuned, tuned_hwc)
    if tuned is not None:
        outputs.write_tuned(folder, tuned.G, {"pivotal_tuning": record["tuning"], "target": record["target"]})
    if video:
        outputs.write_video(folder, video, _frames(G, result, j, noise, target_hwc, options.video_size))
    outputs.write_record(folder, record)
    tuned_final = {"tuned": record["tuning"]["final"]} if tuned is not None else {}
    return {"target": record["target"], "folder": str(folder), **record["final"], **tuned_final}


def _tune(G, ws, noise, target, features, options: ProjectOptions, c, index: int) -> tune.Tuned:
    generator = torch.Generator().manual_seed(position_seed(options.seed, "tune", index))
    with Stage(f"project: tuning G for target {index + 1}", options.tune_g, unit="step") as stage:
        return tune.tune(
            G, ws, noise, target[None], features, steps=options.tune_g, c=c, generator=generator, stage=stage
        )


def _record(options, index: int, distances, target, projected, tuned, tuned_hwc) -> dict:
    """projection.json: what was projected how, the distance at every step, and the final image quality."""
    record = {
        "target": str(options.targets[index]),
        "network": str(options.network),
        "space": options.space,
        "steps": options.steps,
        "seed": options.seed,
        "perceptual": options.perceptual,
        "distances": [round(d, 6) for d in distances.tolist()],
        "final": _quality(target, projected),
    }
    if tuned is not None:
        record["tuning"] = {
            "steps": options.tune_g,
            "distances": [round(d, 6) for d in tuned.distances.tolist()],
            "final": _quality(target, tuned_hwc),
        }
    return record


def _quality(target: np.ndarray, image: np.ndarray) -> dict:
    a, b = (torch.from_numpy(x).permute(2, 0, 1)[None] for x in (target, image))
    value = quality.psnr(a, b)[0]
    return {"psnr_db": None if math.isinf(value) else round(value, 3), "ssim": round(quality.ssim(a, b)[0], 5)}


def _frames(G, result: search.Projection, j: int, noise: dict, target: np.ndarray, size: int | None):
    """Batches of video frames: the target beside the projection after each chosen step (with the final noise), each
    `size` px on its short side (None: VIDEO_SIZE, or the network's size where larger)."""
    pixels = writers.Pixels(size or max(VIDEO_SIZE, min(target.shape[:2])), "nearest")
    target = pixels.arrays(target[None])
    steps = outputs.video_steps(result.history.shape[0])
    for first in range(0, len(steps), 16):
        chosen = steps[first : first + 16]
        ws = result.history[chosen, j].to(result.ws.device).expand(-1, G.num_ws, -1)
        repeated = {name: value.expand(len(chosen), -1, -1) for name, value in noise.items()}
        images = pixels(search.render(G, ws, repeated).cpu())
        yield np.concatenate([np.broadcast_to(target, images.shape), images], axis=2)


def closing_note(summary: dict, outdir: Path) -> str:
    """One line: each target's quality, the final one after pivotal tuning where G was tuned."""
    parts = [f"{s['target']}: {_shown_quality(s)}" for s in summary["targets"][:3]]
    more = f" and {len(summary['targets']) - 3} more" if len(summary["targets"]) > 3 else ""
    return (
        f"projected {len(summary['targets'])} target(s) into {outdir} ({'; '.join(parts)}{more}); "
        f"{summary['seconds_per_step']:.2f} s per step on {summary['device']}"
    )


def _shown_quality(target: dict) -> str:
    projected = f"PSNR {target['psnr_db']} dB, SSIM {target['ssim']}"
    if "tuned" not in target:
        return projected
    tuned = target["tuned"]
    return f"PSNR {tuned['psnr_db']} dB, SSIM {tuned['ssim']} with G tuned ({projected} before)"

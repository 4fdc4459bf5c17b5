"""What `resolve` refuses of the networks' layout options: --g-arch/--d-arch (StyleGAN2's orig, skip and resnet) and
--g-attn/--d-attn (self-attention, nets/attention.py) where the network has no such choice, attention at a resolution
the network has no block at, attention whose map does not fit in memory for the passes that differentiate it
twice, and --grow where the networks cannot grow. Each is one message naming the flag, the figure and the fix."""

from ganforge import memory
from ganforge.config import Config
from ganforge.errors import UserError
from ganforge.families import family_of, titles_where
from ganforge.limits import MIN_RESOLUTION
from ganforge.nets.attention import attention_map_bytes


def parse_resolution_list(flag: str, text: str | None) -> tuple[int, ...] | str:
    """--g-attn '16,32' -> (16, 32); () when not given; the problem's message when it is not whole numbers (which
    resolutions a network has is checked with the rest, `layout_problems`)."""
    try:
        return tuple(int(part) for part in (text or "").split(",") if part.strip())
    except ValueError:
        return f"{flag} {text:.60}: not a comma-separated list of resolutions; write e.g. {flag} 16,32"


def layout_problems(cfg: Config, options, asked, facts) -> list[str]:
    """Every problem of the layout options: `options` as resolved (refused values left out), `asked` as given,
    `facts` what observe() found (the memory available, None where not looked at)."""
    problems = _refused_choices(cfg, asked) + _resolution_problems(cfg) + _growth_problems(cfg, options)
    return problems or _memory_problems(cfg, facts)


def _refused_choices(cfg: Config, asked) -> list[str]:
    """--g-arch/--g-attn choose for StyleGAN2's G, --d-arch/--d-attn for the D StyleGAN2 and StyleGAN3 train with."""
    generator, problems = cfg.model.generator, []
    family = family_of(generator)
    for flag, given in (("--g-arch", asked.g_arch), ("--g-attn", asked.g_attn)):
        if given is not None and not family.g_layouts:
            problems.append(f"{flag} {given}: the {generator} generator has no such choice; drop {flag} or pass a "
                            f"{titles_where(lambda f: f.g_layouts)} --cfg")  # fmt: skip
    for flag, given in (("--d-arch", asked.d_arch), ("--d-attn", asked.d_attn)):
        if given is not None and not family.d_layouts:
            problems.append(f"{flag} {given}: {family.title}'s discriminator has no such choice; drop {flag} or pass "
                            f"a {titles_where(lambda f: f.d_layouts)} --cfg")  # fmt: skip
    return problems


def _resolution_problems(cfg: Config) -> list[str]:
    """Attention where the network has a block: a power of two from 8 to the image's resolution, each once."""
    res, problems = cfg.data.resolution, []
    blocks = [2**i for i in range(MIN_RESOLUTION.bit_length() - 1, res.bit_length())]
    for flag, chosen in (("--g-attn", cfg.model.g_attn), ("--d-attn", cfg.model.d_attn)):
        wrong = [r for r in chosen if r not in blocks]
        if wrong or len(set(chosen)) != len(chosen):
            problems.append(
                f"{flag} {','.join(map(str, chosen))}: attention is at the resolutions of the network's blocks, each "
                f"once: {', '.join(map(str, blocks))} for {res}x{res} images"
            )
    return problems


def _growth_problems(cfg: Config, options) -> list[str]:
    """--grow grows StyleGAN2's networks (nets/growth.py) from a resolution of theirs below the data's; its lengths
    mean nothing without it; and a network whose layers change every step of a fade is not compiled once."""
    if not cfg.model.grow:
        given = [flag for flag, value in (("--grow-from", options.grow_from), ("--grow-kimg", options.grow_kimg)) if
                 value is not None]  # fmt: skip
        return (
            [f"{', '.join(given)}: set the schedule of --grow; add --grow, or drop {' and '.join(given)}"]
            if given
            else []
        )
    res, start, problems = cfg.data.resolution, cfg.schedule.grow_from, []
    if not family_of(cfg.model.generator).grows:
        growing = titles_where(lambda f: f.grows)
        problems.append(f"--grow: grows {growing}'s G and D; the {cfg.model.generator} generator does not grow; drop "
                        f"--grow or pass a {growing} --cfg")  # fmt: skip
    starts = [2**i for i in range(MIN_RESOLUTION.bit_length() - 1, res.bit_length() - 1)]
    if start not in starts:
        choices = ", ".join(map(str, starts)) or "none (the images are too small to grow)"
        problems.append(f"--grow-from {start}: growth starts at a resolution of the network's blocks below the data's "
                        f"{res}: {choices}")  # fmt: skip
    if cfg.runtime.compiling:
        problems.append("--compile: a growing network changes at every step of a fade, which would compile it again "
                        "each step; drop --compile with --grow")  # fmt: skip
    return problems


def _memory_problems(cfg: Config, facts) -> list[str]:
    """The attention maps that R1 (D, on every micro-batch of reals) and the path-length penalty (G, on a
    micro-batch shrunk by pl_batch_shrink) hold to differentiate them twice (nets/attention.py), against the memory
    of the training device."""
    batch, lo, needs = cfg.schedule.batch_gpu, cfg.loss, []
    passes = [("--d-attn", cfg.model.d_attn, "R1", batch)]
    if lo.pl_weight > 0:
        passes.append(("--g-attn", cfg.model.g_attn, "the path-length penalty", max(batch // lo.pl_batch_shrink, 1)))
    rows, cols = cfg.data.aspect
    for flag, chosen, penalty, images in passes:
        for res in chosen:
            positions = res * rows * res * cols  # a non-square block has rows x cols times a square one's positions
            needs.append(
                memory.Need(
                    f"{flag} {res}: {penalty} differentiates the attention at {res * cols}x{res * rows} twice, holding "
                    f"its map ({positions} positions squared for {images} images, float32) and the map's gradients, "
                    "which",
                    attention_map_bytes(res, images) * (rows * cols) ** 2,
                    facts.device_type == "cuda",
                    f"attend at a lower resolution than {res}, or pass a smaller --batch-gpu",
                )
            )
    try:
        memory.check(needs, facts.host_bytes, facts.device_bytes)
    except UserError as error:
        return list(error.problems)
    return []

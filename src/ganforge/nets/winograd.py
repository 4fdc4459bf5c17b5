"""Same-size 3x3 convolution by Winograd's minimal filtering algorithm F(4x4, 3x3), for training on CPU.

Lavin & Gray 2016 ("Fast Algorithms for Convolutional Neural Networks", Eq. 8): each 4x4 output tile is
A^T [(G g G^T) * (B^T d B)] A for the 6x6 input tile d around it, so one input/output channel pair costs 36
multiplications per tile instead of 144; the channel sums become 36 independent matrix products. The transforms
are fixed small matrices, applied as matrix products too, so the whole convolution is a chain of differentiable
torch ops: autograd derives its backward and the double backward of R1 with the same savings.

The matrices follow from the interpolation points by Toom-Cook's construction. The points 0, 1, -1, 1/2, -2 (and
infinity) give about 2.5x less float32 error than Lavin's 0, +-1, +-2 (Barabasz et al. 2020, "Error analysis and
improving the accuracy of Winograd convolution for deep neural networks", Sec. 5): 3-4e-6 of the output's range
where the direct float32 convolution has 3e-7, far inside float32 training noise.
"""

import math
from fractions import Fraction
from functools import cache

import torch

TILE = 4  # output samples per tile side: F(4, 3)
TAPS = 3
SPAN = TILE + TAPS - 1  # input samples per tile side
POINTS = (Fraction(0), Fraction(1), Fraction(-1), Fraction(1, 2), Fraction(-2))  # and infinity
# The transforms run on a few samples at a time, about this many bytes of tiles: small matrix products over much more
# data than the caches hold were several times slower (the channel sums run over the whole batch at once).
CHUNK_BYTES = 4 * 2**20
# The 36 products (and their inputs, outputs and gradients) run in groups of about this many bytes per tensor:
# glibc hands out every block of 32 MiB or more freshly mapped, and faulting it in cost as much as the arithmetic.
GROUP_BYTES = 16 * 2**20
MIN_CHANNELS = 256  # below this (either side) or below MIN_PIXELS the direct convolution was faster on CPU
MIN_PIXELS = 16 * 16


def _polynomial(roots) -> list[Fraction]:
    """Coefficients of prod (x - r), lowest power first, padded to SPAN entries."""
    coefficients = [Fraction(1)]
    for root in roots:
        shifted = [Fraction(0)] + coefficients  # x * p(x)
        coefficients = [a - root * b for a, b in zip(shifted, coefficients + [Fraction(0)], strict=True)]
    return coefficients + [Fraction(0)] * (SPAN - len(coefficients))


def transform_matrices() -> tuple[list, list, list]:
    """(A^T [TILE, SPAN], G [SPAN, TAPS], B^T [SPAN, SPAN]) as exact fractions.

    A^T evaluates the product polynomial at the points, G evaluates the filter polynomial there divided by the
    Lagrange denominators, B^T holds the Lagrange numerators; the last column/row is the point at infinity (the
    leading coefficient).
    """
    finite = len(POINTS)
    a_t = [[p**i for p in POINTS] + [Fraction(int(i == TILE - 1))] for i in range(TILE)]
    g = [[p**k / math.prod(p - q for q in POINTS if q != p) for k in range(TAPS)] for p in POINTS]
    g.append([Fraction(int(k == TAPS - 1)) for k in range(TAPS)])
    b_t = [_polynomial(POINTS[:j] + POINTS[j + 1 :]) for j in range(finite)] + [_polynomial(POINTS)]
    return a_t, g, b_t


@cache
def _matrices(dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A^T [4, 6], G [6, 3], B^T [6, 6] as tensors. Each 2-D transform is the 1-D one along the tile's rows, then
    along its columns: a 6x6 transform costs 2 x 6 products per entry instead of 36 for the Kronecker product."""

    def tensor(rows):
        return torch.tensor([[float(v) for v in row] for row in rows], dtype=torch.float64)

    return tuple(tensor(m).to(dtype=dtype, device=device) for m in transform_matrices())


def worth_it(weight: torch.Tensor, pixels: int) -> bool:
    """Does F(4x4, 3x3) beat the direct convolution on CPU for a layer of this weight [O, I, k, k] at this many
    pixels? Decided when a network is built for CPU (`use_cpu_kernels` of the networks)."""
    out_ch, in_ch, kh, kw = weight.shape
    return kh == kw == TAPS and min(in_ch, out_ch) >= MIN_CHANNELS and pixels >= MIN_PIXELS


def runnable(x: torch.Tensor) -> bool:
    """Can this call take the Winograd path: eager float32 on CPU, outside autocast? Under CPU autocast the direct
    bfloat16 convolution is the fast one, and a graph being compiled or exported (torch.compile, torch.export, ONNX)
    gets the plain convolution, which its backend or runtime implements its own way."""
    return (
        not torch.compiler.is_compiling()
        and not torch.jit.is_tracing()
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and not torch.is_autocast_enabled("cpu")
    )


def conv3x3(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """F.conv2d(x, weight, padding=1) computed tile by tile; x [N, C, H, W], weight [O, C, 3, 3].

    Returns [N, O, H, W] in channels-last memory (the transforms keep channels innermost).
    """
    n, in_ch, h, w = x.shape
    out_ch = weight.shape[0]
    th, tw = math.ceil(h / TILE), math.ceil(w / TILE)
    a_t, g, b_t = _matrices(x.dtype, x.device)
    taps = weight.permute(2, 3, 1, 0).reshape(TAPS, -1)  # [kernel row, (kernel column, C, O)]
    groups = _entry_groups(max(n * th * tw, in_ch) * max(in_ch, out_ch) * x.element_size())
    vs = _Tiles.apply(x.permute(0, 2, 3, 1), b_t, groups)  # B^T d B per group: [entries, N Th Tw, C]
    ms = []
    for (start, stop), v in zip(groups, vs, strict=True):
        rows = (g[start // SPAN : stop // SPAN] @ taps).view(-1, TAPS, in_ch * out_ch)  # G along the kernel's rows
        u = torch.matmul(g, rows).view(stop - start, in_ch, out_ch)  # and along its columns: G w G^T
        ms.append(torch.bmm(v, u))  # [entries, N Th Tw, O]: the channel sums, one matrix product per tile entry
    y = _Untile.apply(a_t, groups, n, th, tw, *ms)  # A^T m A: [N, 4 Th, 4 Tw, O]
    return y[:, :h, :w].permute(0, 3, 1, 2)


def _entry_groups(bytes_per_entry: int) -> tuple[tuple[int, int], ...]:
    """The 36 tile entries in groups of whole rows of 6 (so G w G^T splits the same way), each group's tensors at
    most about GROUP_BYTES."""
    rows = min(SPAN, max(1, GROUP_BYTES // (SPAN * bytes_per_entry)))
    return tuple((SPAN * r, SPAN * min(r + rows, SPAN)) for r in range(0, SPAN, rows))


def _chunks(n: int, bytes_per_sample: int) -> list[slice]:
    """Consecutive sample ranges of about CHUNK_BYTES each (at least one sample)."""
    step = max(1, CHUNK_BYTES // bytes_per_sample)
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _tile_bytes(th: int, tw: int, channels: int, tensor: torch.Tensor) -> int:
    return SPAN * SPAN * th * tw * channels * tensor.element_size()


def _rows_of(groups, tensors, part: slice):
    """(p, the 6 entries of tile row p for the samples in `part` as a [6, k Th Tw C] matrix) for every row p of the
    tile, from one [entries, n, Th Tw, C] tensor per group. The matrices are views (rows n Th Tw C apart), so matrix
    products read and write the groups in place."""
    for (start, stop), tensor in zip(groups, tensors, strict=True):
        for r in range((stop - start) // SPAN):
            yield start // SPAN + r, tensor[SPAN * r : SPAN * (r + 1), part].flatten(1)


class _Tiles(torch.autograd.Function):
    """x [n, H, W, C] (channels-last view) -> B^T d B for every 6x6 tile d of x zero-padded by 1, as one tensor
    [entries, n Th Tw, C] per group of tile entries.

    A linear map whose derivative is its adjoint, _TilesAdjoint, and the other way round: every order of derivative
    is one of the two. Inside, small matrix products run chunk by chunk into preallocated outputs.
    """

    @staticmethod
    def forward(ctx, x, b_t, groups):
        n, h, w, c = x.shape
        th, tw = math.ceil(h / TILE), math.ceil(w / TILE)
        ctx.b_t, ctx.groups, ctx.size = b_t, groups, (h, w)
        padded = x.new_zeros(n, TILE * th + 2, TILE * tw + 2, c)  # the "same" padding, then up to whole tiles
        padded[:, 1 : h + 1, 1 : w + 1] = x
        vs = [x.new_empty(stop - start, n, th * tw, c) for start, stop in groups]
        for part in _chunks(n, _tile_bytes(th, tw, c, x)):
            tiles = padded[part].unfold(1, SPAN, TILE).unfold(2, SPAN, TILE)  # [k, Th, Tw, C, 6, 6], overlapping
            down_columns = b_t @ tiles.permute(4, 5, 0, 1, 2, 3).reshape(SPAN, -1)  # B^T: [6, 6 k Th Tw C]
            for p, entries in _rows_of(groups, vs, part):
                torch.mm(b_t, down_columns[p].view(SPAN, -1), out=entries)  # then along row p: its 6 tile entries
        return tuple(v.flatten(1, 2) for v in vs)

    @staticmethod
    def backward(ctx, *grads):
        return _TilesAdjoint.apply(ctx.b_t, ctx.groups, *ctx.size, *grads), None, None


class _TilesAdjoint(torch.autograd.Function):
    """Per group [entries, n Th Tw, C] -> [n, H, W, C]: B g B^T per tile, overlapping tiles summed, padding dropped."""

    @staticmethod
    def forward(ctx, b_t, groups, h: int, w: int, *grads):
        ctx.b_t, ctx.groups = b_t, groups
        th, tw = math.ceil(h / TILE), math.ceil(w / TILE)
        c = grads[0].shape[2]
        n = grads[0].shape[1] // (th * tw)
        grads = [grad.view(-1, n, th * tw, c) for grad in grads]
        # two spare rows and columns so the tiles' last two rows start whole tile-sized blocks too
        out = grads[0].new_zeros(n, TILE * th + TILE, TILE * tw + TILE, c)
        for part in _chunks(n, _tile_bytes(th, tw, c, out)):
            along_rows = out.new_empty(SPAN, SPAN, (part.stop - part.start) * th * tw * c)
            for p, entries in _rows_of(groups, grads, part):
                torch.mm(b_t.t(), entries, out=along_rows[p])  # B along each row of tile entries
            tiles = b_t.t() @ along_rows.view(SPAN, -1)  # and down the columns
            tiles = tiles.view(SPAN, SPAN, -1, th, tw, c).permute(2, 3, 0, 4, 1, 5)  # [k, Th, 6, Tw, 6, C]
            # tile (ty, tx) entry (i, j) lands on (4 ty + i, 4 tx + j): entries 0-3 fill whole blocks,
            # entries 4-5 overlap the first two of the next tile's
            for i0, i1 in ((0, TILE), (TILE, SPAN)):
                for j0, j1 in ((0, TILE), (TILE, SPAN)):
                    rows, cols = slice(i0, i0 + TILE * th), slice(j0, j0 + TILE * tw)
                    blocks = out[part, rows, cols].unflatten(1, (th, TILE)).unflatten(3, (tw, TILE))
                    blocks[:, :, : i1 - i0, :, : j1 - j0] += tiles[:, :, i0:i1, :, j0:j1]
        return out[:, 1 : h + 1, 1 : w + 1]

    @staticmethod
    def backward(ctx, grad):
        return None, None, None, None, *_Tiles.apply(grad, ctx.b_t, ctx.groups)


class _Untile(torch.autograd.Function):
    """Per group m [entries, n Th Tw, O] -> the sum over groups of A^T m A for every tile, assembled into
    [n, 4 Th, 4 Tw, O] (channels last)."""

    @staticmethod
    def forward(ctx, a_t, groups, n: int, th: int, tw: int, *ms):
        ctx.a_t, ctx.groups = a_t, groups
        out_ch = ms[0].shape[2]
        y = ms[0].new_empty(n, th, TILE, tw, TILE, out_ch)
        ms = [m.view(-1, n, th * tw, out_ch) for m in ms]
        for part in _chunks(n, _tile_bytes(th, tw, out_ch, y)):
            along_rows = y.new_empty(SPAN, TILE, (part.stop - part.start) * th * tw * out_ch)
            for p, entries in _rows_of(groups, ms, part):
                torch.mm(a_t, entries, out=along_rows[p])  # A^T along each row of tile entries
            tiles = a_t @ along_rows.view(SPAN, -1)  # and down the columns: [4, 4 k Th Tw O]
            y[part] = tiles.view(TILE, TILE, -1, th, tw, out_ch).permute(2, 3, 0, 4, 1, 5)
        return y.view(n, TILE * th, TILE * tw, out_ch)

    @staticmethod
    def backward(ctx, grad):
        return None, None, None, None, None, *_UntileAdjoint.apply(grad, ctx.a_t, ctx.groups)


class _UntileAdjoint(torch.autograd.Function):
    """[n, 4 Th, 4 Tw, O] -> A g A^T per 4x4 tile, one [entries, n Th Tw, O] per group."""

    @staticmethod
    def forward(ctx, grad, a_t, groups):
        ctx.a_t, ctx.groups = a_t, groups
        n, h, w, out_ch = grad.shape
        th, tw = h // TILE, w // TILE
        ctx.shape = (n, th, tw)
        ms = [grad.new_empty(stop - start, n, th * tw, out_ch) for start, stop in groups]
        for part in _chunks(n, _tile_bytes(th, tw, out_ch, grad)):
            tiles = grad[part].unflatten(1, (th, TILE)).unflatten(3, (tw, TILE))  # [k, Th, 4, Tw, 4, O]
            down_columns = a_t.t() @ tiles.permute(2, 4, 0, 1, 3, 5).reshape(TILE, -1)  # A: [6, 4 k Th Tw O]
            for p, entries in _rows_of(groups, ms, part):
                torch.mm(a_t.t(), down_columns[p].view(TILE, -1), out=entries)  # then along row p
        return tuple(m.flatten(1, 2) for m in ms)

    @staticmethod
    def backward(ctx, *grads):
        return _Untile.apply(ctx.a_t, ctx.groups, *ctx.shape, *grads), None, None

"""The mapping network z (+ class) -> w of StyleGAN (Karras et al. 2019, Sec. 2), with StyleGAN2's settings.

The discriminator reuses it (z_dim=0, no w_avg) to embed the class label for projection conditioning, like the
official "cmap" network.
"""

import torch
from torch import nn

from ganforge.nets.layers import FullyConnectedLayer, normalize_2nd_moment


class MappingNetwork(nn.Module):
    """z [N, z_dim] and one-hot c [N, c_dim] -> w [N, w_dim], or ws [N, num_ws, w_dim] when num_ws is given.

    z and the class embedding are each normalized to unit second moment and concatenated; `num_layers` dense
    leaky-ReLU layers with learning-rate multiplier 0.01 follow. With w_avg_beta, a buffer `w_avg` tracks the
    moving average of w for the truncation trick (StyleGAN Sec. 3.3/App. B: w' = w_avg + psi (w - w_avg)).
    """

    def __init__(self, z_dim, c_dim, w_dim, num_layers, num_ws=None, w_avg_beta=0.995, lr_multiplier=0.01):
        super().__init__()
        assert z_dim + c_dim > 0, "the mapping network needs z or c"
        self.z_dim, self.c_dim, self.w_dim, self.num_ws, self.w_avg_beta = z_dim, c_dim, w_dim, num_ws, w_avg_beta
        self.num_layers = num_layers
        self.embed = FullyConnectedLayer(c_dim, w_dim) if c_dim > 0 else None
        features = [z_dim + (w_dim if c_dim > 0 else 0)] + [w_dim] * num_layers
        for i in range(num_layers):
            layer = FullyConnectedLayer(features[i], features[i + 1], "lrelu", lr_multiplier=lr_multiplier)
            setattr(self, f"fc{i}", layer)
        if w_avg_beta is not None:
            self.register_buffer("w_avg", torch.zeros([w_dim]))

    def forward(self, z, c, psi=1.0, cutoff=None, update_w_avg=False):
        x = self._embed(z, c)
        for i in range(self.num_layers):
            x = getattr(self, f"fc{i}")(x)
        x = x.to(torch.float32)  # under autocast the dense layers return bf16/fp16; w and w_avg stay fp32
        if update_w_avg:
            assert self.w_avg_beta is not None, "this mapping network tracks no w_avg"
            # w_avg <- beta * w_avg + (1 - beta) * mean(w): lerp from the batch mean towards the old average
            self.w_avg.copy_(x.detach().mean(dim=0).lerp(self.w_avg, self.w_avg_beta))
        if self.num_ws is None:
            return x
        x = x.unsqueeze(1).repeat([1, self.num_ws, 1])  # [N, num_ws, w_dim]
        if psi != 1:
            assert self.w_avg_beta is not None, "truncation needs w_avg"
            n = self.num_ws if cutoff is None else cutoff
            x = torch.cat([self.w_avg.lerp(x[:, :n], psi), x[:, n:]], dim=1)
        return x

    def _embed(self, z, c):
        """Normalized z and normalized class embedding, concatenated: [N, z_dim + w_dim (if c_dim)]."""
        parts = []
        if self.z_dim > 0:
            assert z.ndim == 2 and z.shape[1] == self.z_dim, f"z: expected [N, {self.z_dim}], got {list(z.shape)}"
            parts.append(normalize_2nd_moment(z.to(torch.float32)))
        if self.c_dim > 0:
            assert c.ndim == 2 and c.shape[1] == self.c_dim, f"c: expected [N, {self.c_dim}], got {list(c.shape)}"
            parts.append(normalize_2nd_moment(self.embed(c.to(torch.float32))))
        return torch.cat(parts, dim=1)

    def extra_repr(self) -> str:
        return f"z_dim={self.z_dim}, c_dim={self.c_dim}, w_dim={self.w_dim}, num_ws={self.num_ws}"

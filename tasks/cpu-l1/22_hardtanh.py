# pragma: category=activation
"""HardTanh activation, y = clamp(x, -1, 1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 24
DIM = 1048576


class Model(nn.Module):
    """Applies HardTanh elementwise (clamp to [-1, 1])."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=-1.0, max_val=1.0)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []

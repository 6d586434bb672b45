# pragma: category=activation
"""GELU activation (exact, erf-based)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
DIM = 8192


class Model(nn.Module):
    """Applies the exact GELU, x * Phi(x), elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []

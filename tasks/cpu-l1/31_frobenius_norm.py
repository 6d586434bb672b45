# pragma: category=normalization
# pragma: rtol=2e-3
# PyTorch 1.13's norm of these 16.7M float32 values comes out 6.5e-4 too small
# (its own rounding; torch.sum is exact to 1e-8 here), so an accurate kernel is
# 6.5e-4 off the reference everywhere: rtol 2e-3 leaves 3x room for it
# (docs/verifier.md has the measurements).
"""Frobenius-norm normalization of a whole tensor, y = x / ||x||_F."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
DIM1 = 128
DIM2 = 128


class Model(nn.Module):
    """Divides every element by the Frobenius norm of the entire input tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.norm(x, p="fro")
        return x / norm


def get_inputs():
    x = torch.randn(BATCH, FEATURES, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return []

# pragma: category=activation
"""Log-softmax over the last dimension of a (BATCH, DIM) tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
DIM = 1048576


class Model(nn.Module):
    """Applies log_softmax along a configurable dimension."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return [1]

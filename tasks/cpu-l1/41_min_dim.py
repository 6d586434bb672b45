# pragma: category=pooling_reduction
"""Min reduction over one dimension (values only)."""
import torch
import torch.nn as nn

BATCH = 16
DIM1 = 1024
DIM2 = 1024
REDUCE_DIM = 2


class Model(nn.Module):
    """Returns the minimum values along dim REDUCE_DIM."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=self.dim)[0]


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]

# pragma: category=matmul
"""Matrix-scalar multiplication C = A * s with a Python float s."""
import torch
import torch.nn as nn

M = 6144
N = 4096


class Model(nn.Module):
    """Multiplies every element of an (M, N) matrix by a scalar."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return A * s


def get_inputs():
    A = torch.randn(M, N)
    s = 3.14
    return [A, s]


def get_init_inputs():
    return []

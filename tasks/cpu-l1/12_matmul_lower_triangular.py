# pragma: category=matmul
"""Product of two lower-triangular matrices, C = tril(A @ B)."""
import torch
import torch.nn as nn

N = 1024


class Model(nn.Module):
    """Multiplies two lower-triangular N x N matrices and keeps the lower triangle."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.tril(torch.matmul(A, B))


def get_inputs():
    A = torch.tril(torch.randn(N, N))
    B = torch.tril(torch.randn(N, N))
    return [A, B]


def get_init_inputs():
    return []

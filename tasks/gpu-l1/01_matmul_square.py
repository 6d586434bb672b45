# pragma: category=matmul
"""Square matrix multiplication C = A @ B (float32)."""
import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    """Multiplies two square N x N matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


def get_init_inputs():
    return []

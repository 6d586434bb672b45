# pragma: category=matmul
"""Matrix-vector multiplication C = A @ B with A of shape (M, K) and B of shape (K, 1)."""
import torch
import torch.nn as nn

M = 8192
K = 16384


class Model(nn.Module):
    """Multiplies an (M, K) matrix by a (K, 1) column vector: memory-bound."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, 1)
    return [A, B]


def get_init_inputs():
    return []

# pragma: category=matmul
"""Rectangular matrix multiplication C = A @ B with A of shape (M, K) and B of shape (K, N)."""
import torch
import torch.nn as nn

M = 2048
K = 8192
N = 4096


class Model(nn.Module):
    """Multiplies an (M, K) matrix by a (K, N) matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []

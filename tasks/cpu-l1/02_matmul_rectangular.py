# pragma: category=matmul
"""Rectangular matrix multiplication C = A @ B with A of shape (M, K) and B of shape (K, N)."""
import torch
import torch.nn as nn

M = 1024
K = 2048
N = 512


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

# pragma: category=matmul
"""Batched matrix multiplication C[b] = A[b] @ B[b] (torch.bmm)."""
import torch
import torch.nn as nn

BATCH = 32
M = 256
K = 256
N = 256


class Model(nn.Module):
    """Batched matrix multiplication of (BATCH, M, K) by (BATCH, K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs():
    A = torch.randn(BATCH, M, K)
    B = torch.randn(BATCH, K, N)
    return [A, B]


def get_init_inputs():
    return []

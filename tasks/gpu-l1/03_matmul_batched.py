# pragma: category=matmul
"""Batched matrix multiplication C[b] = A[b] @ B[b] (torch.bmm)."""
import torch
import torch.nn as nn

BATCH = 64
M = 512
K = 512
N = 1024


class Model(nn.Module):
    """Multiplies BATCH pairs of (M, K) and (K, N) matrices."""

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

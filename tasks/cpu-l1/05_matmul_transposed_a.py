# pragma: category=matmul
"""Matrix multiplication with a transposed first operand, C = A.T @ B, A stored as (K, M)."""
import torch
import torch.nn as nn

M = 1024
K = 1536
N = 1024


class Model(nn.Module):
    """Computes A.T @ B where A has shape (K, M) and B has shape (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B)


def get_inputs():
    A = torch.randn(K, M)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []

# pragma: category=matmul
"""Matrix multiplication with a transposed second operand, C = A @ B.T, B stored as (N, K)."""
import torch
import torch.nn as nn

M = 1024
K = 1536
N = 1024


class Model(nn.Module):
    """Computes A @ B.T where A has shape (M, K) and B has shape (N, K)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(N, K)
    return [A, B]


def get_init_inputs():
    return []

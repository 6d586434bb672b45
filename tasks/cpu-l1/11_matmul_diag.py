# pragma: category=matmul
"""Diagonal matrix times matrix, C = diag(A) @ B, with A a vector of length N."""
import torch
import torch.nn as nn

N = 1024
M = 2048


class Model(nn.Module):
    """Builds diag(A) explicitly and multiplies it by an (N, M) matrix (row scaling in disguise)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.diag(A) @ B


def get_inputs():
    A = torch.randn(N)
    B = torch.randn(N, M)
    return [A, B]


def get_init_inputs():
    return []

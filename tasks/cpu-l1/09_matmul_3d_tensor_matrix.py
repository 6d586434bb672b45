# pragma: category=matmul
"""3D tensor times matrix: C[n] = A[n] @ B for A of shape (N, M, K) and B of shape (K, L)."""
import torch
import torch.nn as nn

N = 16
M = 256
K = 512
L = 768


class Model(nn.Module):
    """Multiplies every (M, K) slice of a 3D tensor by the same (K, L) matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(N, M, K)
    B = torch.randn(K, L)
    return [A, B]


def get_init_inputs():
    return []

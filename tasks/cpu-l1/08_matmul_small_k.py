# pragma: category=matmul
"""Matrix multiplication with a large output and a small reduction dimension K."""
import torch
import torch.nn as nn

M = 4096
N = 4096
K = 32


class Model(nn.Module):
    """Multiplies an (M, K) matrix by a (K, N) matrix with K much smaller than M and N."""

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

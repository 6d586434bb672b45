# pragma: category=matmul
"""Matrix multiplication with a small output and a large reduction dimension K."""
import torch
import torch.nn as nn

M = 256
N = 256
K = 32768


class Model(nn.Module):
    """Multiplies an (M, K) matrix by a (K, N) matrix with K much larger than M and N."""

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

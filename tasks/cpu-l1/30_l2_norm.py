# pragma: category=normalization
"""Row-wise L2 normalization, y = x / ||x||_2 along dim=1."""
import torch
import torch.nn as nn

BATCH = 16
DIM = 1048576


class Model(nn.Module):
    """Divides each row of a (BATCH, DIM) tensor by its Euclidean norm."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []

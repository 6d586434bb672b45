# pragma: category=activation
"""ELU activation, y = x if x > 0 else alpha * (exp(x) - 1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
DIM = 1048576
ALPHA = 1.0


class Model(nn.Module):
    """Applies ELU elementwise with a configurable alpha."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return [ALPHA]

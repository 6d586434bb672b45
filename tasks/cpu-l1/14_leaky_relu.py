# pragma: category=activation
"""LeakyReLU activation, y = x if x > 0 else negative_slope * x."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 24
DIM = 1048576
NEGATIVE_SLOPE = 0.01


class Model(nn.Module):
    """Applies LeakyReLU elementwise with a configurable negative slope."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return [NEGATIVE_SLOPE]

# pragma: category=normalization
"""2D batch normalization (nn.BatchNorm2d, training mode: batch statistics)."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
DIM1 = 256
DIM2 = 256


class Model(nn.Module):
    """Normalizes each channel with the batch's mean and variance, then scales and shifts."""

    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [FEATURES]

# pragma: category=normalization
"""RMS normalization over the feature dimension, y = x / sqrt(mean(x^2, dim=1) + eps)."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
DIM1 = 256
DIM2 = 256
EPS = 1e-5


class Model(nn.Module):
    """Divides x by the root mean square of its values along dim=1 (the channel dimension)."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms


def get_inputs():
    x = torch.randn(BATCH, FEATURES, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [FEATURES, EPS]

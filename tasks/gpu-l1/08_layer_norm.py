# pragma: category=normalization
"""Layer normalization over the last three dimensions (nn.LayerNorm with affine weight and bias)."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
DIM1 = 256
DIM2 = 256


class Model(nn.Module):
    """Normalizes each sample over (FEATURES, DIM1, DIM2), then scales and shifts."""

    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [(FEATURES, DIM1, DIM2)]

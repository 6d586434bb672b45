# pragma: category=normalization
"""Group normalization (nn.GroupNorm with affine weight and bias)."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
NUM_GROUPS = 8
DIM1 = 128
DIM2 = 128


class Model(nn.Module):
    """Splits the channels into NUM_GROUPS groups, normalizes each group per sample, then applies a per-channel affine map."""

    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [FEATURES, NUM_GROUPS]

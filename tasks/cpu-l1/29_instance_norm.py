# pragma: category=normalization
"""Instance normalization (nn.InstanceNorm2d, no affine parameters)."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
DIM1 = 128
DIM2 = 128


class Model(nn.Module):
    """Normalizes every (sample, channel) plane over its height and width."""

    def __init__(self, num_features: int):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [FEATURES]

# pragma: category=others
# pragma: rtol=2e-3
# The mean of 16.7M float32 (p - t)^2: a kernel summing them the usual honest
# way (2 threads x 8 SIMD lanes, each lane a float32 sum of 1M terms) is
# 4.6e-4 off the float64 value, where PyTorch's own sum is exact to 1e-7; rtol
# 2e-3 leaves it 4x room (docs/verifier.md has the measurements).
"""Mean squared error loss, mean((predictions - targets)^2), a scalar."""
import torch
import torch.nn as nn

BATCH = 128
DIM = 131072


class Model(nn.Module):
    """Returns the mean of the squared differences between predictions and targets."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    predictions = torch.randn(BATCH, DIM)
    targets = torch.randn(BATCH, DIM)
    return [predictions, targets]


def get_init_inputs():
    return []

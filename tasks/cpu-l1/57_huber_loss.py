# pragma: category=others
# pragma: rtol=2e-3
# The mean of 16.7M float32 Huber terms: a kernel summing them the usual honest
# way (2 threads x 8 SIMD lanes, each lane a float32 sum of 1M terms) is
# 4.6e-4 off the float64 value, where PyTorch's own sum is exact to 1e-7; rtol
# 2e-3 leaves it 4x room (docs/verifier.md has the measurements).
"""Huber (smooth L1) loss with beta = 1, mean over all elements."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
DIM = 131072


class Model(nn.Module):
    """Computes F.smooth_l1_loss(predictions, targets): quadratic below beta, linear above."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(predictions, targets)


def get_inputs():
    predictions = torch.randn(BATCH, DIM)
    targets = torch.randn(BATCH, DIM)
    return [predictions, targets]


def get_init_inputs():
    return []

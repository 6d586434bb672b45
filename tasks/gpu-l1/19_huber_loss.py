# pragma: category=others
"""Huber (smooth L1) loss with beta = 1, mean over all elements."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
DIM = 8192


class Model(nn.Module):
    """Computes F.smooth_l1_loss(predictions, targets), a scalar."""

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

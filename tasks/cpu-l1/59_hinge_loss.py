# pragma: category=others
"""Hinge loss, mean(clamp(1 - predictions * targets, min=0)) with targets in {-1, +1}."""
import torch
import torch.nn as nn

BATCH = 128
DIM = 131072


class Model(nn.Module):
    """Computes the mean hinge loss of real-valued predictions against +/-1 float targets."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs():
    predictions = torch.randn(BATCH, DIM)
    targets = torch.randint(0, 2, (BATCH, DIM)).float() * 2 - 1
    return [predictions, targets]


def get_init_inputs():
    return []

# pragma: category=others
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

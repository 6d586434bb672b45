# pragma: category=others
"""KL divergence between two row-wise distributions, F.kl_div(log(predictions), targets, reduction='batchmean')."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
DIM = 65536


class Model(nn.Module):
    """Takes two probability tensors (rows sum to 1) and returns KL(targets || predictions) averaged over the batch."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


def get_inputs():
    predictions = torch.randn(BATCH, DIM).softmax(dim=-1)
    targets = torch.randn(BATCH, DIM).softmax(dim=-1)
    return [predictions, targets]


def get_init_inputs():
    return []

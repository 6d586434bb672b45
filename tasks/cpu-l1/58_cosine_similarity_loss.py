# pragma: category=others
"""Cosine-similarity loss, mean(1 - cos_sim(predictions, targets)) with rows as vectors."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
DIM = 2048


class Model(nn.Module):
    """Computes the cosine similarity of matching rows and returns mean(1 - similarity)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        cosine_sim = F.cosine_similarity(predictions, targets, dim=1)
        return torch.mean(1 - cosine_sim)


def get_inputs():
    predictions = torch.randn(BATCH, DIM)
    targets = torch.randn(BATCH, DIM)
    return [predictions, targets]


def get_init_inputs():
    return []

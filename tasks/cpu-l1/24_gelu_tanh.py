# pragma: category=activation
"""GELU with the tanh approximation (as in GPT-2 / minGPT), written out by hand."""
import math

import torch
import torch.nn as nn

BATCH = 16
DIM = 1048576


class Model(nn.Module):
    """Computes 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []

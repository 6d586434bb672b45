# pragma: category=pooling_reduction
"""1D average pooling with kernel 8, stride 2 and padding 3 (nn.AvgPool1d, padding counted)."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
SEQ_LEN = 8192
KERNEL_SIZE = 8
STRIDE = 2
PADDING = 3


class Model(nn.Module):
    """Average pooling over the last dimension of a (BATCH, FEATURES, SEQ_LEN) tensor."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, SEQ_LEN)
    return [x]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING]

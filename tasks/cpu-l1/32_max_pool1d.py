# pragma: category=pooling_reduction
"""1D max pooling with kernel 4, stride 2, padding 2 and dilation 3 (nn.MaxPool1d)."""
import torch
import torch.nn as nn

BATCH = 16
FEATURES = 64
SEQ_LEN = 16384
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 2
DILATION = 3


class Model(nn.Module):
    """Max pooling over the last dimension of a (BATCH, FEATURES, SEQ_LEN) tensor."""

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, SEQ_LEN)
    return [x]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING, DILATION]

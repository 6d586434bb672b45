# pragma: category=pooling_reduction
"""3D max pooling with a 3x3x3 window, stride 2, padding 1 and dilation 3 (nn.MaxPool3d)."""
import torch
import torch.nn as nn

BATCH = 8
CHANNELS = 16
DIM1 = 40
DIM2 = 40
DIM3 = 40
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1
DILATION = 3


class Model(nn.Module):
    """Max pooling over the three spatial dimensions of an NCDHW tensor."""

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DIM1, DIM2, DIM3)
    return [x]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING, DILATION]

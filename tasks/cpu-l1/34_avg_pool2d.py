# pragma: category=pooling_reduction
"""2D average pooling with a 3x3 window and stride 3 (nn.AvgPool2d, no padding)."""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
HEIGHT = 128
WIDTH = 128
KERNEL_SIZE = 3


class Model(nn.Module):
    """Average pooling over non-overlapping 3x3 windows of an NCHW tensor."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [KERNEL_SIZE]

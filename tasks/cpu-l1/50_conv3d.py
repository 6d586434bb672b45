# pragma: category=conv
"""Small standard 3D convolution, cubic 3x3x3 kernel, stride 1, no padding, no bias (nn.Conv3d)."""
import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 8
OUT_CHANNELS = 16
KERNEL_SIZE = 3
DEPTH = 32
HEIGHT = 32
WIDTH = 32


class Model(nn.Module):
    """Convolves an NCDHW volume batch with OUT_CHANNELS cubic filters."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv3d = nn.Conv3d(in_channels, out_channels, kernel_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv3d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]

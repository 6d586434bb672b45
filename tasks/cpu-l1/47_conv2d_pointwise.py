# pragma: category=conv
"""Pointwise (1x1) 2D convolution, no bias: a per-pixel linear map across channels."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 64
WIDTH = 64


class Model(nn.Module):
    """Applies a 1x1 convolution mapping IN_CHANNELS to OUT_CHANNELS at every pixel."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]

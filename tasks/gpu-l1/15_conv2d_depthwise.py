# pragma: category=conv
"""Depthwise 2D convolution, 3x3 kernel, padding 1, one filter per channel (groups = channels), no bias."""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
KERNEL_SIZE = 3
HEIGHT = 256
WIDTH = 256


class Model(nn.Module):
    """Convolves each channel with its own KERNEL_SIZE x KERNEL_SIZE filter: memory-bound."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels,
                                bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE]

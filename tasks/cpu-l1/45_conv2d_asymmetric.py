# pragma: category=conv
"""2D convolution with a non-square input and a 3x7 kernel, padding (1, 3), with bias (nn.Conv2d)."""
import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 16
OUT_CHANNELS = 32
KERNEL_H = 3
KERNEL_W = 7
HEIGHT = 96
WIDTH = 256


class Model(nn.Module):
    """Convolves a non-square NCHW batch with rectangular filters; 'same' padding keeps the spatial size."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, padding: tuple):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, (KERNEL_H, KERNEL_W), (KERNEL_H // 2, KERNEL_W // 2)]

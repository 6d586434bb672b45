# pragma: category=conv
"""Transposed 2D convolution, 3x3 kernel, stride 2, padding 1, output_padding 1, no bias (nn.ConvTranspose2d)."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 64
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1
OUTPUT_PADDING = 1
HEIGHT = 128
WIDTH = 128


class Model(nn.Module):
    """Upsamples an NCHW batch by STRIDE with a learned KERNEL_SIZE x KERNEL_SIZE transposed convolution."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int,
                 output_padding: int):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                         output_padding=output_padding, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_t(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, OUTPUT_PADDING]

# pragma: category=conv
"""Transposed 2D convolution, 3x3 kernel, stride 2, padding 1, output_padding 1, no bias (nn.ConvTranspose2d)."""
import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 64
OUT_CHANNELS = 32
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1
OUTPUT_PADDING = 1
HEIGHT = 64
WIDTH = 64


class Model(nn.Module):
    """Upsamples an NCHW batch by 2x with a learned transposed convolution."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int, output_padding: int):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, output_padding=output_padding, bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose2d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, OUTPUT_PADDING]

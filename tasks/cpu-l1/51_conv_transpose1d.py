# pragma: category=conv
"""Transposed 1D convolution, kernel 5, stride 2, padding 2, dilation 1, with bias (nn.ConvTranspose1d)."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 32
KERNEL_SIZE = 5
STRIDE = 2
PADDING = 2
LENGTH = 4096


class Model(nn.Module):
    """Upsamples a (BATCH, IN_CHANNELS, LENGTH) signal with a learned transposed convolution."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.conv_transpose1d = nn.ConvTranspose1d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=True
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose1d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, LENGTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]

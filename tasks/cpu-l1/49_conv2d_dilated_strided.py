# pragma: category=conv
"""2D convolution with stride 2, dilation 2 and padding 2, 3x3 kernel, no bias (nn.Conv2d)."""
import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 64
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 2
DILATION = 2
HEIGHT = 256
WIDTH = 256


class Model(nn.Module):
    """Convolves an NCHW batch with dilated 3x3 filters, sampling every second output position."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.conv2d = nn.Conv2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, DILATION]

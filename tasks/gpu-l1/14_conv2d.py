# pragma: category=conv
"""Standard 2D convolution, 3x3 kernel, stride 1, padding 1, no bias (nn.Conv2d)."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
KERNEL_SIZE = 3
HEIGHT = 128
WIDTH = 128


class Model(nn.Module):
    """Convolves an NCHW image batch with OUT_CHANNELS square filters ("same" padding)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]

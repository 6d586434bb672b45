# pragma: category=conv
"""Standard 1D convolution, kernel 3, stride 1, no padding, no bias (nn.Conv1d)."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
KERNEL_SIZE = 3
LENGTH = 4096


class Model(nn.Module):
    """Convolves a (BATCH, IN_CHANNELS, LENGTH) signal with OUT_CHANNELS filters of width KERNEL_SIZE."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, LENGTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]

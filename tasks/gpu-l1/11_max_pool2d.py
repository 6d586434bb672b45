# pragma: category=pooling_reduction
"""2D max pooling with a 3x3 window, stride 2 and padding 1 (nn.MaxPool2d)."""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
HEIGHT = 256
WIDTH = 256
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1


class Model(nn.Module):
    """Takes the maximum over KERNEL_SIZE x KERNEL_SIZE windows of each channel."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING]

"""The current device, asked for as cheaply as the answer allows (one home for the rule).

torch.cuda.current_device() initialises torch's CUDA lazily and then asks torch's raw
function; once CUDA is initialised the raw function gives the same answer. Where exactly one
device is visible, the answer cannot be anything but 0 (the visible devices are fixed when
CUDA initialises, and set_device refuses any other), so the getter is a C call that answers 0.
"""
from __future__ import annotations

only_device = (0).__index__  # answers 0, at the cost of a C call with no arguments


def torch_device_getter(torch):
    """The cheapest function answering torch's current device, for a torch whose CUDA is
    initialised; None where torch has no raw current-device function."""
    if torch.cuda.device_count() == 1:
        return only_device
    return getattr(torch._C, "_cuda_getDevice", None)

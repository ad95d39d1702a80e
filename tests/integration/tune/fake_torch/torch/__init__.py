"""A stand-in for torch with the few names gpudoc's shim patches (python/gpudoc/tune.py), so that
the shim's patches can be tested end to end on machines without torch or without CUDA. Nothing here
does any math."""
from . import backends, cuda, nn, utils  # noqa: F401

__version__ = "0.0-fake"
channels_last = "channels_last"
bfloat16 = "bfloat16"


class autocast:  # noqa: N801  (torch's name)
    entered = 0

    def __init__(self, device_type, dtype=None):
        self.device_type, self.dtype = device_type, dtype

    def __enter__(self):
        autocast.entered += 1
        return self

    def __exit__(self, *exc):
        return False


def compile(module, mode=None):  # noqa: A001  (torch's name)
    module.compiled_mode = mode
    return module

import os


def is_available():
    return os.environ.get("FAKE_TORCH_CUDA", "1") == "1"

"""A fake ``torch`` for the burn-in's matmul check in tests (no GPU on CI): just what
``driver.MATMUL`` calls. A "GPU" computes the reference product faithfully unless
``FAKE_TORCH_FAULTY`` names its ``CUDA_VISIBLE_DEVICES`` index; then later products differ."""

import os
import time

float16 = "float16"
_faulty = os.environ.get("FAKE_TORCH_FAULTY") == os.environ.get("CUDA_VISIBLE_DEVICES")
_products = [0]


class _Tensor:
    def __init__(self, value):
        self.value = value

    def __matmul__(self, other):
        _products[0] += 1
        wrong = _faulty and _products[0] > 1
        return _Tensor(self.value * other.value + (1 if wrong else 0))


def manual_seed(seed):
    return None


def device(name):
    return name


def randn(*shape, device=None, dtype=None):
    return _Tensor(3)


def equal(a, b):
    return a.value == b.value


class cuda:  # noqa: N801 - the real module's name
    @staticmethod
    def synchronize():
        time.sleep(0.2)  # paces the loop like a GPU would

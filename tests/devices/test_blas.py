"""What aiotf reads of the loaded OpenBLAS."""

from __future__ import annotations

import pytest

from aiotf.devices import blas

SKYLAKEX = "OpenBLAS 0.3.31.188.0  USE64BITINT DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64"


@pytest.fixture
def loaded(monkeypatch):
    """Pretend the loaded OpenBLAS describes itself with ``config`` and ``corename``."""

    def load(config: str | None, corename: str = "") -> None:
        controls = (
            None if config is None else blas._Controls(lambda n: None, lambda: 1, config, corename)
        )
        monkeypatch.setattr(blas._STATE, "controls", lambda: controls)
        blas.small_gemm_kernels.cache_clear()

    yield load
    blas.small_gemm_kernels.cache_clear()


@pytest.mark.parametrize(
    ("config", "corename", "small"),
    [
        (SKYLAKEX, "SkylakeX", True),
        ("OpenBLAS 0.3.27 DYNAMIC_ARCH NO_AFFINITY SapphireRapids", "SapphireRapids", True),
        ("OpenBLAS 0.3.23 DYNAMIC_ARCH", "Cooperlake", True),
        ("OpenBLAS 0.3.31 DYNAMIC_ARCH NO_AFFINITY Zen", "Zen", False),  # AVX2 kernels
        ("OpenBLAS 0.3.31 DYNAMIC_ARCH NO_AFFINITY Haswell", "Haswell", False),
        ("OpenBLAS 0.3.19 DYNAMIC_ARCH NO_AFFINITY SkylakeX", "SkylakeX", False),  # too old
        ("", "SkylakeX", False),  # a build that does not say its version
        (None, "", False),  # no OpenBLAS at all
    ],
)
def test_small_matrix_kernels_by_core_and_version(loaded, config, corename, small) -> None:
    loaded(config, corename)
    assert blas.small_gemm_kernels() is small


def test_the_loaded_openblas_describes_itself() -> None:
    controls = blas._find_controls()
    if controls is None:
        pytest.skip("numpy has no OpenBLAS here")
    assert controls.config.startswith("OpenBLAS ") and controls.corename


def test_the_cpu_vendor_is_read_from_cpuinfo() -> None:
    intel = ["processor\t: 0\n", "vendor_id\t: GenuineIntel\n", "cpu family\t: 6\n"]
    assert blas._vendor(intel) == "GenuineIntel"
    assert blas._vendor(["processor : 0", "vendor_id : AuthenticAMD"]) == "AuthenticAMD"
    assert blas._vendor(["processor : 0", "CPU implementer : 0x41"]) == ""  # an Arm board
    assert isinstance(blas.cpu_vendor(), str)

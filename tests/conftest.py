"""CPU test setup: Triton's interpreter runs the generated kernels on CPU tensors."""
import os

os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    # Every test session renders into its own cache, so rendering itself is exercised.
    os.environ["SPARSEMLA_CACHE_DIR"] = str(tmp_path_factory.mktemp("sparsemla_cache"))
    yield

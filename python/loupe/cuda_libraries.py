"""Where Loupe's CUDA runtime finds NVRTC and cuBLASLt: the folders of the `nvidia-*` wheels
(torch's CUDA builds depend on them; `pip install nvidia-cuda-nvrtc` adds NVRTC to any machine),
handed to the C++ side through LOUPE_CUDA_LIBRARY_PATH, which it searches after the system
loader path and /usr/local/cuda/lib64 (docs/cuda-runtime.md). A path the user set is kept
first."""

from __future__ import annotations

import glob
import os


def wheel_library_folders() -> list[str]:
    """The `lib` folders of the installed nvidia wheels that hold NVRTC or cuBLASLt."""
    try:
        import nvidia  # a namespace package of the CUDA wheels
    except ImportError:
        return []
    folders = []
    for root in getattr(nvidia, "__path__", []):
        for lib in sorted(glob.glob(os.path.join(root, "*", "lib"))):
            if glob.glob(os.path.join(lib, "libnvrtc.so*")) or glob.glob(
                os.path.join(lib, "libcublasLt.so*")
            ):
                folders.append(lib)
    return folders


def set_library_path() -> None:
    found = wheel_library_folders()
    given = [p for p in os.environ.get("LOUPE_CUDA_LIBRARY_PATH", "").split(":") if p]
    paths = given + [p for p in found if p not in given]
    if paths:
        os.environ["LOUPE_CUDA_LIBRARY_PATH"] = ":".join(paths)


if __name__ == "__main__":  # scripts/test.sh: the folders for the C++ tests
    print(":".join(wheel_library_folders()))

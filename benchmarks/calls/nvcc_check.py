"""The probes' no-GPU build check (`--compile`): nvcc for sm_90a on a CUDA C++ probe's kernel alone (with the
explicit instantiations given), printing ptxas's resource lines; then, where torch is installed, on the whole source
as torch.utils.cpp_extension.load_inline builds it on the GPU machine, against torch's headers with stand-ins for
the two CUDA headers a CPU build of torch lacks. The second build catches what the host part breaks (session 39's
call 3 failed there: a kernel helper named `at`, torch's namespace)."""
import os
import subprocess
import sysconfig
import tempfile

HOST_STUBS = {
    "c10/cuda/CUDAException.h": "#pragma once\n#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)\n",
    "c10/cuda/CUDAStream.h": ("#pragma once\n#include <cuda_runtime.h>\nnamespace c10 { namespace cuda {\n"
                              "struct Stream { operator cudaStream_t() const { return 0; } };\n"
                              "inline Stream getCurrentCUDAStream() { return {}; } } }\n"),
}


def build(kernel: str, instantiations: str, host: str) -> int:
    """0 if both builds pass (the second skipped without torch), else nvcc's return code."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.cu")
        with open(path, "w") as f:
            f.write(kernel + instantiations)
        nvcc = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-c", "-o", os.path.join(tmp, "probe.o")]
        res = subprocess.run(nvcc + ["-Xptxas", "-v", path], capture_output=True, text=True)
        print(res.stdout + res.stderr)
        if res.returncode:
            return res.returncode
        try:
            from torch.utils.cpp_extension import include_paths
        except ImportError:
            print("host part not built: no torch")
            return 0
        for name, text in HOST_STUBS.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, "stubs", name)), exist_ok=True)
            with open(os.path.join(tmp, "stubs", name), "w") as f:
                f.write(text)
        with open(path, "w") as f:
            f.write("#include <torch/extension.h>\n" + kernel + host)
        incs = [os.path.join(tmp, "stubs"), sysconfig.get_paths()["include"]] + include_paths()
        res = subprocess.run(nvcc + ["-std=c++20"] + [f"-I{d}" for d in incs] + [path], capture_output=True, text=True)
        errors = [line for line in res.stderr.splitlines() if "error" in line]
        print(f"host part with torch's headers: rc={res.returncode}" + "".join(f"\n  {e}" for e in errors[:5]))
        return res.returncode

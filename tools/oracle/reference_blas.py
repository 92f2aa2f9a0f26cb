"""Runs this process under Debian's reference BLAS (libblas3).

The NumPy oracle's float64 results depend on the BLAS's summation order:
OpenBLAS (which takes over the libblas.so.3 alternative when
libopenblas0-pthread is installed, as `make demo-train` does) blocks its
products differently, so its goldens differ in the last bits and rows of
one matrix product depend on how many rows were computed together. The
committed forward goldens are defined under the reference BLAS, whose
dot products run left to right. ensure() re-executes the script once with
the reference library first on the loader's path; call it before numpy is
imported (the environment variable stops a second re-execution).
"""

import os
import sys
import sysconfig

_MARK = "TL_REFERENCE_BLAS"


def _reference_dir():
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    return os.path.join("/usr/lib", multiarch, "blas")


def ensure():
    if os.environ.get(_MARK):
        return
    os.environ[_MARK] = "1"
    ref = _reference_dir()
    if not os.path.exists(os.path.join(ref, "libblas.so.3")):
        sys.stderr.write("note: Debian's reference BLAS (libblas3) is not installed; "
                         "forward goldens may differ in the last bits\n")
        return
    path = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = ref + (":" + path if path else "")
    os.execv(sys.executable, [sys.executable] + sys.argv)

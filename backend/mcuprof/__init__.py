"""mcuprof: live call trees and flame graphs for microcontroller firmware."""

import os

# No mcuprof code does linear algebra, yet numpy's OpenBLAS starts a thread per core at
# import; one thread saves that start-up on every command (a user's setting still wins).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

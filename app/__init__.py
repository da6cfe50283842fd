"""figsearch: a search engine for the figures of research papers.

OpenMP threads (PyTorch's, FAISS's) that wait for work by spinning keep a core busy; when the
other core of a small machine is taken by another process, each parallel step then waits for a
time slice. On this project's 2-core machine under load, a MobileNetV2 pass over one crop took
1.3 s with two spinning threads and 0.04 s with passive waiting, a MiniLM query 307 ms against
9 ms (`scripts/omp_wait_ab.py`). The OpenMP runtime reads the policy when it loads, so it is set
here, before anything of the project imports PyTorch; a policy set in the environment wins.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

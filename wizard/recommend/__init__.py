"""The recommendation engine: which driver, CUDA and PyTorch fit this host, and why."""

"""Datasets, samplers and the DataLoader, with PyTorch's names and defaults (``torch.utils.data``)."""

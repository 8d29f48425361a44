"""Example training programs (``python -m autograd_compile demo --model gpt|cnn``)."""

"""PyTorch's path ``torch.nn.modules.rnn``: the same classes as ``acg.nn``."""
from ..rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401

__all__ = ['GRU', 'GRUCell', 'LSTM', 'LSTMCell', 'RNN', 'RNNBase', 'RNNCell', 'RNNCellBase']

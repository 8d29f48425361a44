"""``Tensor.item()`` inside a whole-step trace: a number known only once the program ran.

A training step very often ends in ``return loss.item()``. Traced, the loss is a
tracer with no value yet, so ``.item()`` cannot give a Python number. Inside the
trace it returns a :class:`DeferredItem` instead: returned from the step (alone, or
in a tuple, list or dict), it becomes one more program output, read back as a Python
number after the call (what eager's ``.item()`` gives: a float, an int or a bool).
Any other use (a branch, arithmetic, formatting, keeping it in a list) raises,
which makes that step run eagerly with the reason logged, exactly as before.

>>> d = DeferredItem("a tensor")
>>> d + 1
Traceback (most recent call last):
...
RuntimeError: the step uses the value of a tensor's .item() in Python while it is traced; only returning it is deferred to after the program
"""
from __future__ import annotations

from typing import Any, NoReturn

_MESSAGE = ("the step uses the value of a tensor's .item() in Python while it is traced; "
            "only returning it is deferred to after the program")


class DeferredItem:
    """The result of ``tensor.item()`` while a step is traced (see the module)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor

    def _used(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(_MESSAGE)

    __bool__ = __float__ = __int__ = __index__ = __complex__ = __round__ = _used
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _used
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _used
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __divmod__ = _used
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _used
    __format__ = __str__ = _used
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:  # a debugger or an error message may show it
        return "<the value of .item(), known after the compiled step runs>"

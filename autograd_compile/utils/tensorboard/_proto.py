"""A tiny protobuf encoder: just what TensorBoard's event files need, no ``protobuf`` package.

A message is the concatenation of its fields; each helper returns one field's bytes (key,
then payload) for the wire types proto3 uses: varint (0), 64-bit (1), length-delimited (2)
and 32-bit (5). As proto3 does, scalar fields equal to their default are left out
(``keep=True`` writes them anyway: a field inside a ``oneof`` is always written), message
fields are always written, repeated numbers are packed.

>>> msg(1, string(1, "a") + varint(2, 150))
b'\\n\\x06\\n\\x01a\\x10\\x96\\x01'
"""
from __future__ import annotations

import struct
from collections.abc import Iterable

import numpy as np

VARINT, I64, LEN, I32 = 0, 1, 2, 5


def _uvarint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int32/int64 go out as their 64-bit two's complement
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(num: int, wire: int) -> bytes:
    return _uvarint(num << 3 | wire)


def varint(num: int, value: int | bool, keep: bool = False) -> bytes:
    """An int32/int64/uint32/bool/enum field."""
    return _key(num, VARINT) + _uvarint(int(value)) if value or keep else b""


def double(num: int, value: float, keep: bool = False) -> bytes:
    return _key(num, I64) + struct.pack("<d", value) if value or keep else b""


def float32(num: int, value: float, keep: bool = False) -> bytes:
    return _key(num, I32) + struct.pack("<f", value) if value or keep else b""


def data(num: int, value: bytes, keep: bool = False) -> bytes:
    """A ``bytes`` field."""
    return _key(num, LEN) + _uvarint(len(value)) + value if value or keep else b""


def string(num: int, value: str, keep: bool = False) -> bytes:
    return data(num, value.encode("utf-8"), keep)


def msg(num: int, body: bytes) -> bytes:
    """A message field: written even when empty (a set message field has presence)."""
    return data(num, body, keep=True)


def packed_doubles(num: int, values: Iterable[float]) -> bytes:
    return data(num, np.asarray(list(values), dtype="<f8").tobytes())


def packed_floats(num: int, values: Iterable[float]) -> bytes:
    return data(num, np.asarray(list(values), dtype="<f4").tobytes())


def packed_varints(num: int, values: Iterable[int]) -> bytes:
    return data(num, b"".join(_uvarint(int(v)) for v in values))


def repeated(num: int, values: Iterable[bytes | str]) -> bytes:
    """A repeated length-delimited field (strings, bytes, encoded messages): one key each."""
    return b"".join(data(num, v.encode("utf-8") if isinstance(v, str) else v, keep=True)
                    for v in values)

"""Operator dispatch: schemas, keys, the dispatcher and the registration API."""
from .dispatcher import DISPATCHER, DispatchError, OpOverload, boxed
from .keys import COMPOSITE, TLS, DispatchKey, exclude_keys, include_keys
from .library import Library, RegistrationHandle, ops
from .schema import Argument, FunctionSchema, SchemaError, parse_schema

__all__ = ["DISPATCHER", "DispatchError", "OpOverload", "boxed", "COMPOSITE", "TLS",
           "DispatchKey", "exclude_keys", "include_keys", "Library", "RegistrationHandle",
           "ops", "Argument", "FunctionSchema", "SchemaError", "parse_schema"]

"""LMCache's controller wire format, for Debian's /usr/bin/python3 with python3-msgpack.

Two users import this one module, so that the bytes they produce come from the same code:

* generate-controller-messages.py (engine/src/test/resources/golden/controller/) installs
  ``msgspec_standin()`` as the module ``msgspec`` and then imports LMCache's own, unmodified
  ``message.py``: the class definitions are LMCache's, the encoding rules are this stand-in's.
* lmcache_worker_sim.py builds the same messages from ``SCHEMAS`` (a table of LMCache's message
  names, field names in wire order and defaults) with ``message()``; the generator checks that
  table against LMCache's classes, and ``--self-check`` checks the table against the golden bytes.

The encoding rules (real msgspec is not installable here: not in Debian bookworm, and PyPI is not
reachable), each with what it rests on in msgspec's documentation or its C encoder
(msgspec/_core.c):

* A ``Struct`` encodes as one map of its fields in field order (docs, "Supported Types: Struct":
  "msgspec.Struct types map to objects/maps"). Fields are ordered base classes first, as for
  dataclasses (docs, "Structs: Field Ordering": "The field ordering rules for Struct types are
  identical to those for dataclasses").
* A tagged struct's map starts with its tag field (docs, "Structs: Tagged Unions": with
  ``tag=True`` "tag_field defaults to "type", and tag defaults to the struct class name"; the
  example ``b'{"type":"Get","key":"my key"}'`` puts it first). ``tag_field`` alone also makes a
  struct tagged, with the class name as tag; ``tag`` and ``tag_field`` are inherited.
* Defaults are written: "By default, msgspec encodes all fields in a Struct type, including
  optional fields" (docs, "Omitting Default Values"; LMCache sets no ``omit_defaults``).
  ``[]``/``{}`` defaults and ``field(default_factory=...)`` give each instance a new value.
* ``Enum`` encodes as its member value ("Enum / IntEnum": "encode as their member values").
  Tuples and lists are arrays; dicts are maps in insertion order; dataclasses are maps of their
  fields without a leading underscore; ``None`` is nil; ``bool`` is true/false.
* Integers take the smallest msgpack form (positive fixint, uint8/16/32/64, negative fixint,
  int8/16/32/64) and must lie in [-2**63, 2**64) (docs, "int"; widths: _core.c
  ``mpack_encode_long``). Floats are always float64 (0xcb, _core.c ``mpack_encode_float``).
  Strings are fixstr/str8/str16/str32 by UTF-8 length (_core.c ``mpack_encode_str``).

python3-msgpack's ``Packer(use_bin_type=True, use_single_float=False)`` makes the same width
choices for int, float and str; ``check_width_rules()`` asserts each of them on sample values so
that a different msgpack release cannot change the bytes silently.
"""

import dataclasses
import enum
import sys
import types
import typing

import msgpack

INT_MIN = -(1 << 63)
INT_LIMIT = 1 << 64


# ---------------------------------------------------------------------------------------------
# Bytes: one packer, one unpacker.
# ---------------------------------------------------------------------------------------------

def pack(wire_tree):
    """Encodes a tree of None/bool/int/float/str/list/dict (dicts in wire order) as msgspec would."""
    return msgpack.packb(wire_tree, use_bin_type=True, use_single_float=False)


def unpack(data):
    """Decodes one msgpack value; maps keep their wire order; int map keys are allowed."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)


def check_width_rules():
    """Asserts that python3-msgpack picks the same encodings as msgspec's C encoder."""
    # Pairs, not a dict: 0 == False and 1.0 == True would collide as dict keys.
    expect = [
        (0, "00"),
        (127, "7f"), (128, "cc80"), (255, "ccff"), (256, "cd0100"), (65536, "ce00010000"),
        ((1 << 32), "cf0000000100000000"), ((1 << 63), "cf8000000000000000"),
        (INT_LIMIT - 1, "cfffffffffffffffff"), (-1, "ff"), (-32, "e0"), (-33, "d0df"), (-129, "d1ff7f"),
        (-32769, "d2ffff7fff"), (INT_MIN, "d38000000000000000"), (0.5, "cb3fe0000000000000"),
        (1.0, "cb3ff0000000000000"), ("", "a0"), ("a" * 31, "bf" + "61" * 31),
        ("a" * 32, "d920" + "61" * 32), ("a" * 256, "da0100" + "61" * 256), (None, "c0"), (True, "c3"),
        (False, "c2"),
    ]
    for value, hexed in expect:
        got = pack(value).hex()
        if got != hexed:
            raise AssertionError(f"python3-msgpack encodes {value!r} as {got}, msgspec as {hexed}")
    if pack(list(range(15)))[0] != 0x9F or pack(list(range(16)))[0] != 0xDC:
        raise AssertionError("array headers differ from msgspec's (fixarray below 16, array16 from 16)")
    if pack({i: i for i in range(16)})[0] != 0xDE:
        raise AssertionError("map headers differ from msgspec's (fixmap below 16, map16 from 16)")


# ---------------------------------------------------------------------------------------------
# The msgspec stand-in: Struct, field, msgpack.encode/decode.
# ---------------------------------------------------------------------------------------------

class _Factory:
    """What ``field(default_factory=...)`` and an empty ``[]``/``{}``/``set()`` default become."""

    def __init__(self, make):
        self.make = make


class _FieldSpec:
    def __init__(self, default, default_factory):
        self.default = default
        self.default_factory = default_factory


_NODEFAULT = object()


def field(*, default=_NODEFAULT, default_factory=_NODEFAULT, name=None):
    """msgspec.field: a default or a default factory (renaming is not used by LMCache: refused)."""
    if name is not None:
        raise NotImplementedError("msgspec stand-in: field(name=...) is not supported")
    return _FieldSpec(default, default_factory)


def _default_of(value):
    """The stored default for a class attribute value (msgspec's rules for mutable defaults)."""
    if isinstance(value, _FieldSpec):
        if value.default_factory is not _NODEFAULT:
            return _Factory(value.default_factory)
        return _default_of(value.default) if value.default is not _NODEFAULT else _NODEFAULT
    if isinstance(value, (list, dict, set, bytearray)):
        if len(value):
            raise TypeError("msgspec refuses a non-empty mutable default; use default_factory")
        return _Factory(type(value))
    return value


def _is_classvar(annotation):
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


class Struct:
    """msgspec.Struct: fields from annotations (bases first), defaults, tag configuration."""

    __struct_fields__ = ()
    __struct_defaults__ = {}
    __struct_tag_field__ = None
    __struct_tag__ = None  # the effective tag value of this class, or None when untagged
    __struct_tag_rule__ = None  # what subclasses inherit: True, a callable, or an explicit value

    def __init_subclass__(cls, tag=None, tag_field=None, **options):
        super().__init_subclass__()
        if options:
            raise NotImplementedError(f"msgspec stand-in: struct options {sorted(options)} are not supported")
        parent = next(b for b in cls.__mro__[1:] if issubclass(b, Struct))
        rule = parent.__struct_tag_rule__ if tag is None else tag
        tag_field = parent.__struct_tag_field__ if tag_field is None else tag_field
        if rule is False:
            rule, tag_field = None, None
        if rule is not None or tag_field is not None:
            tag_field = tag_field or "type"
            if rule is None or rule is True:
                value = cls.__name__
            elif callable(rule):
                value = rule(cls.__qualname__)
            elif tag is not None:
                value = rule
            else:
                # An explicit tag value named by a base class: no LMCache class does this, and
                # guessing msgspec's behaviour here would put a wrong tag in golden bytes.
                raise NotImplementedError(f"{cls.__name__} inherits the explicit tag {rule!r}")
            cls.__struct_tag__ = value
        else:
            cls.__struct_tag__ = None
        cls.__struct_tag_field__ = tag_field
        cls.__struct_tag_rule__ = rule

        fields, defaults = [], {}
        for klass in reversed(cls.__mro__):
            if klass is Struct or not issubclass(klass, Struct):
                continue
            for name, annotation in klass.__dict__.get("__annotations__", {}).items():
                if _is_classvar(annotation):
                    continue
                if name not in fields:
                    fields.append(name)
                if name in klass.__dict__:
                    defaults[name] = _default_of(klass.__dict__[name])
        seen_default = None
        for name in fields:
            if name in defaults:
                seen_default = name
            elif seen_default is not None:
                raise TypeError(f"Required field '{name}' cannot follow optional fields ('{seen_default}')")
        if tag_field in fields:
            raise TypeError(f"tag_field {tag_field!r} conflicts with a field of {cls.__name__}")
        cls.__struct_fields__ = tuple(fields)
        cls.__struct_defaults__ = defaults

    def __init__(self, *args, **kwargs):
        fields = type(self).__struct_fields__
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes {len(fields)} fields, got {len(args)} positional")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"Unexpected keyword argument '{name}' for {type(self).__name__}")
            if name in values:
                raise TypeError(f"Argument '{name}' given by name and position")
            values[name] = value
        for name in fields:
            if name not in values:
                default = type(self).__struct_defaults__.get(name, _NODEFAULT)
                if default is _NODEFAULT:
                    raise TypeError(f"Missing required argument '{name}' of {type(self).__name__}")
                values[name] = default.make() if isinstance(default, _Factory) else default
            object.__setattr__(self, name, values[name])

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, f) == getattr(other, f) for f in self.__struct_fields__)

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__struct_fields__)
        return f"{type(self).__name__}({inner})"


def to_wire(obj):
    """The tree msgspec's msgpack encoder writes for ``obj`` (dicts in wire order)."""
    if obj is None or isinstance(obj, (bool, str, float)):
        return obj
    if isinstance(obj, enum.Enum):
        return to_wire(obj.value)
    if isinstance(obj, int):
        if not INT_MIN <= obj < INT_LIMIT:
            raise OverflowError(f"msgspec encodes ints in [-2**63, 2**64): {obj}")
        return int(obj)
    if isinstance(obj, Struct):
        out = {}
        if type(obj).__struct_tag__ is not None:
            out[type(obj).__struct_tag_field__] = type(obj).__struct_tag__
        for name in type(obj).__struct_fields__:
            out[name] = to_wire(getattr(obj, name))
        return out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_wire(getattr(obj, f.name))
                for f in dataclasses.fields(obj) if not f.name.startswith("_")}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_wire(x) for x in obj]
    if isinstance(obj, dict):
        return {to_wire(k): to_wire(v) for k, v in obj.items()}
    raise TypeError(f"msgspec stand-in cannot encode {type(obj).__name__}")


def encode(obj):
    """msgspec.msgpack.encode."""
    return pack(to_wire(obj))


def msgspec_standin():
    """A module object named ``msgspec`` (with ``msgspec.msgpack``) to put in ``sys.modules``."""
    module = types.ModuleType("msgspec")
    module.__doc__ = "lmcache4j's stand-in for msgspec (see tests/python/lmcache_wire.py)"
    module.Struct = Struct
    module.field = field
    module.NODEFAULT = _NODEFAULT
    sub = types.ModuleType("msgspec.msgpack")
    sub.encode = encode

    def decode(data, type=None):  # noqa: A002 - msgspec's signature
        raise NotImplementedError("msgspec stand-in: typed decoding is not provided; use lmcache_wire.unpack")

    sub.decode = decode
    module.msgpack = sub
    return module


def install_msgspec_standin():
    """Makes ``import msgspec`` return the stand-in (before LMCache's modules are imported)."""
    module = msgspec_standin()
    sys.modules["msgspec"] = module
    sys.modules["msgspec.msgpack"] = module.msgpack
    return module


# ---------------------------------------------------------------------------------------------
# LMCache's messages as a table: name -> ((field, default-or-REQUIRED), ...) in wire order.
# Facts about LMCache's message.py (names, fields, order, defaults, tags); the generator checks
# this table against the classes themselves every time it runs.
# ---------------------------------------------------------------------------------------------

REQUIRED = object()
EMPTY_LIST = ("[]",)  # a fresh [] per message
EMPTY_DICT = ("{}",)  # a fresh {} per message

_WORKER = (("instance_id", REQUIRED), ("worker_id", REQUIRED))
_ADDRESS = (("ip", REQUIRED), ("port", REQUIRED))
_KV_OP = _WORKER + (("key", REQUIRED), ("location", REQUIRED), ("seq_num", 0))
_NUM_TOKENS = (("num_tokens", REQUIRED),)

SCHEMAS = {
    # worker -> controller (PUSH)
    "DeRegisterMsg": _WORKER + _ADDRESS,
    "KVAdmitMsg": _KV_OP,
    "KVEvictMsg": _KV_OP,
    "BatchedKVOperationMsg": _WORKER + (("location", REQUIRED), ("operations", REQUIRED)),
    "FullSyncBatchMsg": _WORKER + (("location", REQUIRED), ("sync_id", REQUIRED), ("batch_id", REQUIRED),
                                   ("keys", REQUIRED)),
    "FullSyncEndMsg": _WORKER + (("location", REQUIRED), ("sync_id", REQUIRED), ("actual_total_keys", REQUIRED)),
    # worker -> controller (request/reply)
    "RegisterMsg": _WORKER + _ADDRESS + (("peer_init_url", REQUIRED),),
    "HeartbeatMsg": _WORKER + _ADDRESS + (("peer_init_url", REQUIRED),),
    "BatchedP2PLookupMsg": (("hashes", REQUIRED), ("instance_id", REQUIRED), ("worker_id", REQUIRED)),
    "FullSyncStartMsg": _WORKER + (("location", REQUIRED), ("sync_id", REQUIRED), ("total_keys", REQUIRED),
                                   ("batch_count", REQUIRED)),
    "FullSyncStatusMsg": _WORKER + (("sync_id", REQUIRED),),
    # controller -> worker replies
    "RegisterRetMsg": (("extra_config", EMPTY_DICT),),
    "HeartbeatRetMsg": (("commands", EMPTY_LIST),),
    "BatchedP2PLookupRetMsg": (("layout_info", REQUIRED),),
    "FullSyncStartRetMsg": (("sync_id", REQUIRED), ("accepted", REQUIRED), ("error_msg", None)),
    "FullSyncStatusRetMsg": (("sync_id", REQUIRED), ("is_complete", REQUIRED), ("global_progress", REQUIRED),
                             ("can_exit_freeze", REQUIRED), ("missing_batches", EMPTY_LIST)),
    "ErrorMsg": (("error", REQUIRED),),
    # controller -> worker control messages and their replies
    "ClearWorkerMsg": (("worker_event_id", REQUIRED), ("location", REQUIRED)),
    "PinWorkerMsg": (("worker_event_id", REQUIRED), ("location", REQUIRED), ("tokens", REQUIRED)),
    "CompressWorkerMsg": (("worker_event_id", REQUIRED), ("method", REQUIRED), ("location", REQUIRED),
                          ("tokens", None)),
    "DecompressWorkerMsg": (("worker_event_id", REQUIRED), ("method", REQUIRED), ("location", REQUIRED),
                            ("tokens", None)),
    "MoveWorkerMsg": (("worker_event_id", REQUIRED), ("old_position", REQUIRED), ("new_position", REQUIRED),
                      ("tokens", None), ("copy", True)),
    "HealthWorkerMsg": (("worker_event_id", REQUIRED),),
    "CheckFinishWorkerMsg": (("worker_event_id", REQUIRED),),
    "ClearWorkerRetMsg": _NUM_TOKENS,
    "PinWorkerRetMsg": _NUM_TOKENS,
    "CompressWorkerRetMsg": _NUM_TOKENS,
    "DecompressWorkerRetMsg": _NUM_TOKENS,
    "MoveWorkerRetMsg": _NUM_TOKENS,
    "HealthWorkerRetMsg": (("error_code", REQUIRED),),
    "CheckFinishWorkerRetMsg": (("status", REQUIRED),),
    # orchestrator -> controller and replies
    "QueryInstMsg": (("event_id", REQUIRED), ("ip", REQUIRED)),
    "LookupMsg": (("event_id", REQUIRED), ("tokens", REQUIRED)),
    "ClearMsg": (("event_id", REQUIRED), ("instance_id", REQUIRED), ("location", REQUIRED)),
    "PinMsg": (("event_id", REQUIRED), ("instance_id", REQUIRED), ("location", REQUIRED), ("tokens", REQUIRED)),
    "CompressMsg": (("event_id", REQUIRED), ("instance_id", REQUIRED), ("method", REQUIRED),
                    ("location", REQUIRED), ("tokens", None)),
    "DecompressMsg": (("event_id", REQUIRED), ("instance_id", REQUIRED), ("method", REQUIRED),
                      ("location", REQUIRED), ("tokens", None)),
    "MoveMsg": (("event_id", REQUIRED), ("old_position", REQUIRED), ("new_position", REQUIRED),
                ("tokens", None), ("copy", False)),
    "HealthMsg": (("event_id", REQUIRED), ("instance_id", REQUIRED)),
    "CheckFinishMsg": (("event_id", REQUIRED),),
    "QueryWorkerInfoMsg": (("event_id", REQUIRED), ("instance_id", REQUIRED), ("worker_ids", REQUIRED)),
    "QueryInstRetMsg": (("event_id", REQUIRED), ("instance_id", REQUIRED)),
    "LookupRetMsg": (("event_id", REQUIRED), ("layout_info", REQUIRED)),
    "ClearRetMsg": (("event_id", REQUIRED), ("num_tokens", REQUIRED)),
    "PinRetMsg": (("event_id", REQUIRED), ("num_tokens", REQUIRED)),
    "CompressRetMsg": (("event_id", REQUIRED), ("num_tokens", REQUIRED)),
    "DecompressRetMsg": (("event_id", REQUIRED), ("num_tokens", REQUIRED)),
    "MoveRetMsg": (("event_id", REQUIRED), ("num_tokens", REQUIRED)),
    "HealthRetMsg": (("event_id", REQUIRED), ("error_codes", REQUIRED)),
    "CheckFinishRetMsg": (("status", REQUIRED),),
    "QueryWorkerInfoRetMsg": (("event_id", REQUIRED), ("worker_infos", REQUIRED)),
}

# The tagged heartbeat commands (tag field "command_type") and the untagged KVOpEvent.
COMMAND_TAG_FIELD = "command_type"
COMMAND_SCHEMAS = {"full_sync": (("reason", None), ("args", None))}
KV_OP_EVENT_FIELDS = ("op_type", "key", "seq_num")
WORKER_INFO_FIELDS = ("instance_id", "worker_id", "ip", "port", "peer_init_url", "registration_time",
                      "last_heartbeat_time")
OP_ADMIT = "admit"
OP_EVICT = "evict"


def _fill(kind, schema, fields):
    unknown = set(fields) - {name for name, _ in schema}
    if unknown:
        raise TypeError(f"{kind} has no fields {sorted(unknown)}")
    out = {}
    for name, default in schema:
        if name in fields:
            out[name] = fields[name]
        elif default is REQUIRED:
            raise TypeError(f"{kind} needs {name}")
        elif default is EMPTY_LIST:
            out[name] = []
        elif default is EMPTY_DICT:
            out[name] = {}
        else:
            out[name] = default
    return out


def message(type_name, **fields):
    """The wire tree of LMCache message ``type_name``: {"type": name, fields in order, defaults filled}."""
    if type_name not in SCHEMAS:
        raise KeyError(f"not an LMCache controller message: {type_name}")
    out = {"type": type_name}
    out.update(_fill(type_name, SCHEMAS[type_name], fields))
    return out


def command(tag, **fields):
    """A heartbeat command's wire tree, e.g. command("full_sync", reason="controller_restart")."""
    out = {COMMAND_TAG_FIELD: tag}
    out.update(_fill(tag, COMMAND_SCHEMAS[tag], fields))
    return out


def kv_op(op_type, key, seq_num):
    """One KVOpEvent of a BatchedKVOperationMsg (an untagged struct: a plain map)."""
    if op_type not in (OP_ADMIT, OP_EVICT):
        raise ValueError(f"op_type is admit or evict, not {op_type!r}")
    return {"op_type": op_type, "key": key, "seq_num": seq_num}


def encode_message(type_name, **fields):
    """``pack(message(type_name, **fields))``."""
    return pack(message(type_name, **fields))


def decode_message(data):
    """Unpacks one frame and checks it is a tagged LMCache message; returns the map."""
    tree = unpack(data)
    if not isinstance(tree, dict) or not tree or next(iter(tree)) != "type":
        raise ValueError(f"not a tagged LMCache message: {data[:32].hex()}")
    return tree

"""LMCache's controller wire format over the real msgspec library.

Two users import this one module, so that the bytes they produce come from the same code:

* lmcache_worker_sim.py and controller_fuzz.py build LMCache's messages from ``SCHEMAS`` (a table
  of LMCache's message names, field names in wire order and defaults): ``encode_message`` makes a
  ``msgspec.Struct`` class per message with ``msgspec.defstruct`` (tagged with the class name
  under ``"type"``, as LMCache's ``MsgBase(msgspec.Struct, tag=True)``) and encodes it with
  ``msgspec.msgpack.encode``, so every byte on the wire is msgspec's own.
* generate-controller-messages.py (engine/src/test/resources/golden/controller/) imports LMCache's
  own message.py with this same msgspec and checks ``SCHEMAS`` against LMCache's classes.

Run it with the virtual environment ``./lmcache4j test`` creates (tests/python/requirements.txt
pins msgspec, pyzmq, msgpack and cbor2).
"""

import typing

import msgspec

INT_MIN = -(1 << 63)
INT_LIMIT = 1 << 64


def pack(wire_tree):
    """msgspec's msgpack encoding of a tree of None/bool/int/float/str/list/dict (also of a malformed one)."""
    return msgspec.msgpack.encode(wire_tree)


def unpack(data):
    """Decodes one msgpack value untyped; maps keep their wire order; integer map keys are kept."""
    return msgspec.msgpack.decode(data)


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


def _struct(name, schema, **tagging):
    """A real msgspec.Struct class for one schema entry (field types are left open: Any)."""
    fields = []
    for field_name, default in schema:
        if default is REQUIRED:
            fields.append((field_name, typing.Any))
        elif default is EMPTY_LIST:
            fields.append((field_name, typing.Any, msgspec.field(default_factory=list)))
        elif default is EMPTY_DICT:
            fields.append((field_name, typing.Any, msgspec.field(default_factory=dict)))
        else:
            fields.append((field_name, typing.Any, default))
    return msgspec.defstruct(name, fields, **tagging)


STRUCTS = {name: _struct(name, schema, tag=True) for name, schema in SCHEMAS.items()}
COMMAND_STRUCTS = {tag: _struct("FullSyncCommand", schema, tag_field=COMMAND_TAG_FIELD, tag=tag)
                   for tag, schema in COMMAND_SCHEMAS.items()}
KV_OP_EVENT = msgspec.defstruct("KVOpEvent", [(name, typing.Any) for name in KV_OP_EVENT_FIELDS])


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
    _fill(type_name, SCHEMAS[type_name], fields)  # names the missing or unknown field first
    return msgspec.to_builtins(STRUCTS[type_name](**fields))


def command(tag, **fields):
    """A heartbeat command's wire tree, e.g. command("full_sync", reason="controller_restart")."""
    _fill(tag, COMMAND_SCHEMAS[tag], fields)
    return msgspec.to_builtins(COMMAND_STRUCTS[tag](**fields))


def kv_op(op_type, key, seq_num):
    """One KVOpEvent of a BatchedKVOperationMsg (an untagged struct: a plain map)."""
    if op_type not in (OP_ADMIT, OP_EVICT):
        raise ValueError(f"op_type is admit or evict, not {op_type!r}")
    return msgspec.to_builtins(KV_OP_EVENT(op_type, key, seq_num))


def encode_message(type_name, **fields):
    """msgspec's encoding of LMCache message ``type_name`` (a tagged Struct) with ``fields``."""
    if type_name not in SCHEMAS:
        raise KeyError(f"not an LMCache controller message: {type_name}")
    _fill(type_name, SCHEMAS[type_name], fields)
    return msgspec.msgpack.encode(STRUCTS[type_name](**fields))


def decode_message(data):
    """Unpacks one frame and checks it is a tagged LMCache message; returns the map."""
    tree = unpack(data)
    if not isinstance(tree, dict) or not tree or next(iter(tree)) != "type":
        raise ValueError(f"not a tagged LMCache message: {data[:32].hex()}")
    return tree

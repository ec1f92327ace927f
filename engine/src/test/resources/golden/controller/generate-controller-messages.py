#!/usr/bin/env python3
"""Writes controller-messages.json: golden msgpack bytes of LMCache's cache-controller messages.

    <venv>/bin/python generate-controller-messages.py /path/to/LMCache > controller-messages.json

Run it with the virtual environment ``./lmcache4j test`` creates (.cache/python; the real msgspec,
pinned in tests/python/requirements.txt). What comes from where (README.md beside this file says
the same at more length):

* LMCache's code: the message classes, read from the LMCache checkout given as the argument and
  imported unmodified: lmcache/v1/cache_controller/message.py, commands/base.py and
  commands/full_sync.py. Their class names, field names, field order, defaults and tag settings
  decide every byte below. Nothing of LMCache is copied into this repository.
* msgspec: the real library encodes every message (``msgspec.msgpack.encode``).
* ``lmcache.logging`` is replaced by a one-function stub (full_sync.py imports init_logger), and
  LMCache's package __init__ files are not run, so a full LMCache clone (with torch-importing
  packages) works as well as a copy of the three files.

Self-checks before the JSON is printed, each fatal: every message class of LMCache's ``Msg`` union
has at least one vector; each vector's bytes decode back to exactly the encoded tree, tag first;
and lmcache_wire.SCHEMAS (the table lmcache4j's Python worker simulator builds its messages from)
agrees with LMCache's classes and re-encodes every vector to the same bytes.

Output: a JSON list of {"name", "type", "fields", "hex"}. "fields" is the message's map without the
tag entry, in wire order, with integers as LMCache writes them (a key >= 2**63 is that unsigned
number); maps with integer keys (HealthRetMsg.error_codes) have their keys written as decimal
strings, because JSON object keys are strings.
"""

import importlib.util
import json
import logging
import os
import sys
import types
import typing

import msgspec


def _find_wire_module_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    probe = here
    while probe != os.path.dirname(probe):
        candidate = os.path.join(probe, "tests", "python")
        if os.path.isfile(os.path.join(candidate, "lmcache_wire.py")):
            return candidate
        probe = os.path.dirname(probe)
    sys.exit("cannot find tests/python/lmcache_wire.py above " + here)


sys.path.insert(0, _find_wire_module_dir())
import lmcache_wire as wire  # noqa: E402


def import_lmcache_messages(checkout):
    """Imports LMCache's message.py from ``checkout`` (lmcache.logging stubbed); returns the module."""
    controller_dir = os.path.join(checkout, "lmcache", "v1", "cache_controller")
    if not os.path.isfile(os.path.join(controller_dir, "message.py")):
        sys.exit(f"{checkout} has no lmcache/v1/cache_controller/message.py (give the LMCache checkout)")
    # Package shells with the checkout's directories as their path: submodules are found there,
    # the packages' own __init__.py files (torch imports in a full clone) are not executed.
    for name, path in (("lmcache", ("lmcache",)), ("lmcache.v1", ("lmcache", "v1")),
                       ("lmcache.v1.cache_controller", ("lmcache", "v1", "cache_controller")),
                       ("lmcache.v1.cache_controller.commands", ("lmcache", "v1", "cache_controller", "commands"))):
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(checkout, *path)]
        sys.modules[name] = package
    log_stub = types.ModuleType("lmcache.logging")
    log_stub.init_logger = logging.getLogger
    sys.modules["lmcache.logging"] = log_stub
    spec = importlib.util.spec_from_file_location("lmcache.v1.cache_controller.message",
                                                  os.path.join(controller_dir, "message.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# Values a real deployment sends: chunk keys are 64-bit (a sha256_cbor chain folded to 64 bits is
# unsigned, so half of them are >= 2**63; LMCache's builtin-hash keys are signed and often
# negative), token ids up to a 152k vocabulary, backend names as LMCache spells them.
KEY_HIGH = 0xF3A91C2B7D4E8F60          # >= 2**63: uint64 on the wire
KEY_MAX = (1 << 64) - 1
KEY_SIGN = 1 << 63                      # exactly 2**63
KEY_NEG = -7046029254386353131          # a CPython hash() value
KEY_NEG_SMALL = -1
KEY_MID = 0x1B873593C2B2AE35           # < 2**63: uint64 too (> 2**32)
CPU, DISK, REMOTE = "LocalCPUBackend", "LocalDiskBackend", "RemoteBackend"
PROMPT_256 = [(i * 7919 + 128000) % 151936 for i in range(256)]  # 256 token ids, fixint to uint32
SYNC_ID = "vllm-prefill-0_0_3f9c2a1b"


def vectors(m):
    """(name, message object) for every message class, with the cases the decoders must get right."""
    ops = [
        m.KVOpEvent(op_type=m.OpType.ADMIT, key=KEY_HIGH, seq_num=0),
        m.KVOpEvent(op_type=m.OpType.ADMIT, key=KEY_NEG, seq_num=1),
        m.KVOpEvent(op_type=m.OpType.EVICT, key=KEY_MAX, seq_num=255),
        m.KVOpEvent(op_type=m.OpType.ADMIT, key=42, seq_num=256),
        m.KVOpEvent(op_type=m.OpType.EVICT, key=KEY_NEG_SMALL, seq_num=70000),
        m.KVOpEvent(op_type=m.OpType.ADMIT, key=KEY_MID, seq_num=(1 << 32) + 5),
    ]
    sync_keys = [KEY_HIGH, KEY_NEG, KEY_MAX, KEY_SIGN, KEY_MID, 0, 1, 127, 128, -32, -33,
                 65535, 65536, (1 << 32) - 1, 1 << 32, -(1 << 63), 99, -129]  # 18 keys: array16
    full_sync = m.FullSyncCommand(reason="controller_restart", args={"batch_size": 2000})
    return [
        # worker -> controller, PUSH
        ("DeRegisterMsg", m.DeRegisterMsg(instance_id="vllm-prefill-0", worker_id=0, ip="10.0.3.17", port=8200)),
        ("KVAdmitMsg.uint64_key", m.KVAdmitMsg(instance_id="vllm-prefill-0", worker_id=1, key=KEY_HIGH,
                                               location=CPU, seq_num=7)),
        ("KVAdmitMsg.default_seq_num", m.KVAdmitMsg(instance_id="vllm-prefill-0", worker_id=0, key=KEY_MID,
                                                    location=DISK)),
        ("KVEvictMsg.negative_key", m.KVEvictMsg(instance_id="vllm-decode-1", worker_id=3, key=KEY_NEG,
                                                 location=REMOTE, seq_num=1024)),
        ("BatchedKVOperationMsg.admit_and_evict", m.BatchedKVOperationMsg(
            instance_id="vllm-prefill-0", worker_id=0, location=CPU, operations=ops)),
        ("BatchedKVOperationMsg.empty", m.BatchedKVOperationMsg(
            instance_id="vllm-prefill-0", worker_id=0, location=DISK, operations=[])),
        ("FullSyncBatchMsg", m.FullSyncBatchMsg(instance_id="vllm-prefill-0", worker_id=0, location=CPU,
                                                sync_id=SYNC_ID, batch_id=0, keys=sync_keys)),
        ("FullSyncBatchMsg.empty_keys", m.FullSyncBatchMsg(instance_id="vllm-prefill-0", worker_id=0,
                                                           location=CPU, sync_id=SYNC_ID, batch_id=1, keys=[])),
        ("FullSyncEndMsg", m.FullSyncEndMsg(instance_id="vllm-prefill-0", worker_id=0, location=CPU,
                                            sync_id=SYNC_ID, actual_total_keys=len(sync_keys))),
        # worker -> controller, request/reply (DEALER -> ROUTER)
        ("RegisterMsg.no_peer_url", m.RegisterMsg(instance_id="vllm-prefill-0", worker_id=0, ip="10.0.3.17",
                                                  port=8200, peer_init_url=None)),
        ("RegisterMsg.unicode_and_peer_url", m.RegisterMsg(
            instance_id="推理-β-instance-with-a-name-longer-than-31-bytes", worker_id=7, ip="fd00::1f",
            port=65535, peer_init_url="10.0.3.17:8300")),
        ("HeartbeatMsg", m.HeartbeatMsg(instance_id="vllm-prefill-0", worker_id=0, ip="10.0.3.17", port=8200,
                                        peer_init_url=None)),
        ("BatchedP2PLookupMsg", m.BatchedP2PLookupMsg(hashes=[KEY_HIGH, KEY_NEG, 5], instance_id="vllm-decode-1",
                                                      worker_id=0)),
        ("FullSyncStartMsg", m.FullSyncStartMsg(instance_id="vllm-prefill-0", worker_id=0, location=CPU,
                                                sync_id=SYNC_ID, total_keys=len(sync_keys), batch_count=1)),
        ("FullSyncStatusMsg", m.FullSyncStatusMsg(instance_id="vllm-prefill-0", worker_id=0, sync_id=SYNC_ID)),
        # controller -> worker replies
        ("RegisterRetMsg.heartbeat_url", m.RegisterRetMsg(extra_config={"heartbeat_url": "127.0.0.1:8082"})),
        ("RegisterRetMsg.default", m.RegisterRetMsg()),
        ("HeartbeatRetMsg.no_commands", m.HeartbeatRetMsg(commands=[])),
        ("HeartbeatRetMsg.full_sync", m.HeartbeatRetMsg(commands=[full_sync])),
        ("HeartbeatRetMsg.full_sync_defaults", m.HeartbeatRetMsg(commands=[m.FullSyncCommand()])),
        ("BatchedP2PLookupRetMsg", m.BatchedP2PLookupRetMsg(layout_info=[
            ("vllm-prefill-0", CPU, 3, "10.0.3.17:8300"), ("vllm-decode-1", DISK, 1, "10.0.3.18:8300")])),
        ("FullSyncStartRetMsg.accepted", m.FullSyncStartRetMsg(sync_id=SYNC_ID, accepted=True)),
        ("FullSyncStartRetMsg.refused", m.FullSyncStartRetMsg(sync_id=SYNC_ID, accepted=False,
                                                              error_msg="sync already running")),
        ("FullSyncStatusRetMsg.progress", m.FullSyncStatusRetMsg(sync_id=SYNC_ID, is_complete=False,
                                                                 global_progress=0.625, can_exit_freeze=False,
                                                                 missing_batches=[2, 5])),
        ("FullSyncStatusRetMsg.done", m.FullSyncStatusRetMsg(sync_id=SYNC_ID, is_complete=True,
                                                             global_progress=1.0, can_exit_freeze=True)),
        ("ErrorMsg", m.ErrorMsg(error="Unknown message: QueryInstMsg")),
        # controller -> worker control messages (REQ -> worker's REP) and replies
        ("ClearWorkerMsg", m.ClearWorkerMsg(worker_event_id="clear-0001", location=CPU)),
        ("PinWorkerMsg", m.PinWorkerMsg(worker_event_id="pin-0001", location=CPU, tokens=PROMPT_256[:16])),
        ("CompressWorkerMsg", m.CompressWorkerMsg(worker_event_id="cmp-1", method="cachegen", location=CPU)),
        ("DecompressWorkerMsg", m.DecompressWorkerMsg(worker_event_id="dcmp-1", method="cachegen", location=CPU,
                                                      tokens=[1, 2, 3])),
        ("MoveWorkerMsg.prefetch", m.MoveWorkerMsg(worker_event_id="move-0001", old_position=DISK,
                                                   new_position=("10.0.3.17:8200", CPU), tokens=PROMPT_256)),
        ("MoveWorkerMsg.defaults", m.MoveWorkerMsg(worker_event_id="move-0002", old_position=DISK,
                                                   new_position=("10.0.3.17:8200", CPU))),
        ("HealthWorkerMsg", m.HealthWorkerMsg(worker_event_id="health-0001")),
        ("CheckFinishWorkerMsg", m.CheckFinishWorkerMsg(worker_event_id="move-0001")),
        ("ClearWorkerRetMsg", m.ClearWorkerRetMsg(num_tokens=131072)),
        ("PinWorkerRetMsg", m.PinWorkerRetMsg(num_tokens=256)),
        ("CompressWorkerRetMsg", m.CompressWorkerRetMsg(num_tokens=0)),
        ("DecompressWorkerRetMsg", m.DecompressWorkerRetMsg(num_tokens=3)),
        ("MoveWorkerRetMsg", m.MoveWorkerRetMsg(num_tokens=512)),
        ("HealthWorkerRetMsg", m.HealthWorkerRetMsg(error_code=0)),
        ("CheckFinishWorkerRetMsg", m.CheckFinishWorkerRetMsg(status="finished")),
        # orchestrator -> controller and replies
        ("QueryInstMsg", m.QueryInstMsg(event_id="q-1", ip="10.0.3.17")),
        ("LookupMsg.256_tokens", m.LookupMsg(event_id="lookup-0001", tokens=PROMPT_256)),
        ("LookupMsg.empty", m.LookupMsg(event_id="lookup-0002", tokens=[])),
        ("ClearMsg", m.ClearMsg(event_id="c-1", instance_id="vllm-prefill-0", location=CPU)),
        ("PinMsg", m.PinMsg(event_id="p-1", instance_id="vllm-prefill-0", location=CPU, tokens=PROMPT_256[:8])),
        ("CompressMsg", m.CompressMsg(event_id="cm-1", instance_id="vllm-prefill-0", method="cachegen",
                                      location=CPU)),
        ("DecompressMsg", m.DecompressMsg(event_id="dm-1", instance_id="vllm-prefill-0", method="cachegen",
                                          location=CPU, tokens=[7, 8])),
        ("MoveMsg", m.MoveMsg(event_id="mv-1", old_position=("vllm-prefill-0", DISK),
                              new_position=("vllm-prefill-0", CPU), tokens=PROMPT_256[:4], copy=True)),
        ("MoveMsg.defaults", m.MoveMsg(event_id="mv-2", old_position=("vllm-prefill-0", DISK),
                                       new_position=("vllm-decode-1", CPU))),
        ("HealthMsg", m.HealthMsg(event_id="h-1", instance_id="vllm-prefill-0")),
        ("CheckFinishMsg", m.CheckFinishMsg(event_id="mv-1")),
        ("QueryWorkerInfoMsg.all", m.QueryWorkerInfoMsg(event_id="w-1", instance_id="vllm-prefill-0",
                                                        worker_ids=None)),
        ("QueryWorkerInfoMsg.some", m.QueryWorkerInfoMsg(event_id="w-2", instance_id="vllm-prefill-0",
                                                         worker_ids=[0, 3])),
        ("QueryInstRetMsg.found", m.QueryInstRetMsg(event_id="q-1", instance_id="vllm-prefill-0")),
        ("QueryInstRetMsg.none", m.QueryInstRetMsg(event_id="q-2", instance_id=None)),
        ("LookupRetMsg.two_instances", m.LookupRetMsg(event_id="lookup-0001", layout_info={
            "vllm-prefill-0": (CPU, 256), "vllm-decode-1": (DISK, 128)})),
        ("LookupRetMsg.empty", m.LookupRetMsg(event_id="lookup-0002", layout_info={})),
        ("ClearRetMsg", m.ClearRetMsg(event_id="c-1", num_tokens=4096)),
        ("PinRetMsg", m.PinRetMsg(event_id="p-1", num_tokens=256)),
        ("CompressRetMsg", m.CompressRetMsg(event_id="cm-1", num_tokens=0)),
        ("DecompressRetMsg", m.DecompressRetMsg(event_id="dm-1", num_tokens=2)),
        ("MoveRetMsg", m.MoveRetMsg(event_id="mv-1", num_tokens=256)),
        ("HealthRetMsg.int_keys", m.HealthRetMsg(event_id="h-1", error_codes={0: 0, 1: -1, 3: 2})),
        ("CheckFinishRetMsg", m.CheckFinishRetMsg(status="finished")),
        ("QueryWorkerInfoRetMsg", m.QueryWorkerInfoRetMsg(event_id="w-1", worker_infos=[m.WorkerInfo(
            instance_id="vllm-prefill-0", worker_id=0, ip="10.0.3.17", port=8200, peer_init_url=None,
            registration_time=1718000000.25, last_heartbeat_time=1718000042.5)])),
    ]


def json_friendly(tree):
    """Integer map keys as decimal strings (JSON object keys are strings); everything else as is."""
    if isinstance(tree, dict):
        return {str(k) if isinstance(k, int) else k: json_friendly(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [json_friendly(x) for x in tree]
    return tree


def check_schema_table(m):
    """lmcache_wire.SCHEMAS (used by the worker simulator) must say what LMCache's classes say."""
    def described(cls):
        out = []
        for f in msgspec.structs.fields(cls):
            if f.default_factory is not msgspec.NODEFAULT:
                default = {list: wire.EMPTY_LIST, dict: wire.EMPTY_DICT}[f.default_factory]
            elif f.default is msgspec.NODEFAULT:
                default = wire.REQUIRED
            elif f.default == [] or f.default == {}:
                default = wire.EMPTY_LIST if f.default == [] else wire.EMPTY_DICT
            else:
                default = f.default
            out.append((f.name, default))
        return tuple(out)

    def tagging(cls):
        config = cls.__struct_config__
        return config.tag_field, config.tag

    classes = typing.get_args(m.Msg)
    names = {c.__name__ for c in classes}
    if names != set(wire.SCHEMAS):
        raise AssertionError(f"SCHEMAS and LMCache's Msg union differ: only LMCache {sorted(names - set(wire.SCHEMAS))},"
                             f" only SCHEMAS {sorted(set(wire.SCHEMAS) - names)}")
    for cls in classes:
        if tagging(cls) != ("type", cls.__name__):
            raise AssertionError(f"{cls.__name__} is tagged {tagging(cls)}")
        if described(cls) != wire.SCHEMAS[cls.__name__]:
            raise AssertionError(f"{cls.__name__}: LMCache {described(cls)} vs SCHEMAS {wire.SCHEMAS[cls.__name__]}")
    fs = m.FullSyncCommand
    if tagging(fs) != (wire.COMMAND_TAG_FIELD, "full_sync") or described(fs) != wire.COMMAND_SCHEMAS["full_sync"]:
        raise AssertionError(f"FullSyncCommand differs from COMMAND_SCHEMAS: {described(fs)}")
    if tagging(m.KVOpEvent)[1] is not None or m.KVOpEvent.__struct_fields__ != wire.KV_OP_EVENT_FIELDS:
        raise AssertionError("KVOpEvent differs from KV_OP_EVENT_FIELDS")
    if [o.value for o in m.OpType] != [wire.OP_ADMIT, wire.OP_EVICT]:
        raise AssertionError("OpType values differ")
    import dataclasses
    if tuple(f.name for f in dataclasses.fields(m.WorkerInfo)) != wire.WORKER_INFO_FIELDS:
        raise AssertionError("WorkerInfo differs from WORKER_INFO_FIELDS")
    return classes


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: .cache/python/bin/python generate-controller-messages.py LMCACHE_CHECKOUT > controller-messages.json")
    m = import_lmcache_messages(argv[1])
    classes = check_schema_table(m)
    out, covered = [], set()
    for name, msg in vectors(m):
        data = msgspec.msgpack.encode(msg)
        tree = msgspec.to_builtins(msg)
        decoded = wire.unpack(data)
        if decoded != tree or list(decoded) != list(tree) or next(iter(decoded)) != "type":
            raise AssertionError(f"{name}: decodes to {decoded!r}, encoded {tree!r}")
        fields = {k: v for k, v in decoded.items() if k != "type"}
        if wire.encode_message(decoded["type"], **fields) != data:
            raise AssertionError(f"{name}: lmcache_wire.message() encodes different bytes")
        covered.add(type(msg))
        out.append({"name": name, "type": type(msg).__name__, "fields": json_friendly(fields), "hex": data.hex()})
    missing = [c.__name__ for c in classes if c not in covered]
    if missing:
        raise AssertionError(f"no vector for {missing}")
    if len({v["name"] for v in out}) != len(out):
        raise AssertionError("vector names repeat")
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)

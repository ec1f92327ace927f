#!/usr/bin/env python3
"""Writes mp-frames.json: golden frames of LMCache's multiprocess (MP) protocol.

    <venv>/bin/python generate-mp-frames.py /tmp/lmcache-src /tmp/lmcache-src-later > mp-frames.json

Run it with the tests' Python environment (.cache/python: the real msgspec 0.22.0). The two
arguments are directories laid out as LMCache's package path, holding files read from LMCache's
public source (nothing of LMCache is copied into this repository):

* first:  lmcache/v1/multiprocess/transport/zmq_impl/wire.py at LMCache commit
          0be164ed091d95c19a6a1f37005609d33dae7efe (the wire pin: LEGACY_OPERATION_IDS,
          encode_operation, decode_operation), and lmcache/v1/multiprocess/custom_types.py at
          commit 00d6dd185e705e15daa63c01950db4e58a70578d (the 8-field IPCCacheServerKey and the
          RegisterEngineDrivenContextPayload ending in group_layouts: schema "BASE").
* second: lmcache/v1/multiprocess/custom_types.py of the later version the design notes cite
          (code-index id 69707146292; its commit is not resolvable from the index): the 11-field
          key, the extended payload and the three response dataclasses with the five-field
          RegisterEngineDrivenContextResponse: schema "EXTENDED".

What comes from where:

* LMCache's code decides the schema and the op ids: the classes above are imported unmodified
  and their instances are encoded; the op frames come from wire.encode_operation.
* msgspec encodes every frame (custom_types.get_customized_encoder, i.e. msgspec.msgpack.Encoder,
  for arguments, as LMCache's client does; plain msgspec.msgpack.encode for results, after the
  server's bool()/int() coercion, as LMCache's server does).
* Written here, because they are not in those files: the frame layout [uid, op, arg...] and the
  reply layout [uid, op, result?] (mq.py@0db75c62 as described in docs/design/mp-server.md §2), and
  the transfer-context dicts inside the prepare responses ({"slots": [{offset, length, shape,
  dtype}], "chunk_indices": [...]}: server_transfer.py / ShmSlotDescriptor.to_dict, §4.3, §6).
* Stubbed (not installable here or not needed to define the classes): ``torch`` (a module with
  empty Tensor, dtype and Size classes, used only in annotations and isinstance checks),
  ``lmcache`` (a package shell with torch_dev=None and torch_device_type="cuda"),
  ``lmcache.v1.multiprocess.rpc`` (RpcOperation = str), ``lmcache.v1.multiprocess.group_view``
  (EngineGroupInfo: an empty msgspec.Struct; only empty lists of it are encoded) and
  ``lmcache.v1.platform.base.ipc_wrapper`` (DeviceIPCWrapper with pickle Serialize/Deserialize;
  never used). LMCache's package __init__ files are not executed.

Self-checks before printing, each fatal: every op frame decodes back through wire.decode_operation
to its name; every request argument decodes back (typed, with LMCache's classes) to an equal
object; every "invalid" key is refused by LMCache's own decoder too.

Output: {"ops": [...], "requests": [...], "invalid_keys": [...], "replies": [...]}; frames are hex.
"""

import importlib.util
import json
import os
import pickle
import sys
import types

import msgspec


def _package(name, path):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
    return module


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def install_stubs(root):
    torch = types.ModuleType("torch")
    for cls in ("Tensor", "dtype", "Size"):
        setattr(torch, cls, type(cls, (), {}))
    sys.modules["torch"] = torch
    lmcache = _package("lmcache", os.path.join(root, "lmcache"))
    lmcache.torch_dev = None
    lmcache.torch_device_type = "cuda"
    _package("lmcache.v1", os.path.join(root, "lmcache", "v1"))
    _package("lmcache.v1.multiprocess", os.path.join(root, "lmcache", "v1", "multiprocess"))
    _package("lmcache.v1.multiprocess.transport", os.path.join(root, "lmcache", "v1", "multiprocess", "transport"))
    _package("lmcache.v1.multiprocess.transport.zmq_impl",
             os.path.join(root, "lmcache", "v1", "multiprocess", "transport", "zmq_impl"))
    rpc = types.ModuleType("lmcache.v1.multiprocess.rpc")
    rpc.RpcOperation = str
    sys.modules[rpc.__name__] = rpc
    group_view = types.ModuleType("lmcache.v1.multiprocess.group_view")
    group_view.EngineGroupInfo = type("EngineGroupInfo", (msgspec.Struct,), {})
    sys.modules[group_view.__name__] = group_view
    _package("lmcache.v1.platform", "/nonexistent")
    _package("lmcache.v1.platform.base", "/nonexistent")
    ipc = types.ModuleType("lmcache.v1.platform.base.ipc_wrapper")
    ipc.DeviceIPCWrapper = type("DeviceIPCWrapper", (), {"Serialize": staticmethod(pickle.dumps),
                                                         "Deserialize": staticmethod(pickle.loads)})
    sys.modules[ipc.__name__] = ipc


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, later_root = sys.argv[1], sys.argv[2]
    install_stubs(root)
    mp = os.path.join("lmcache", "v1", "multiprocess")
    wire = _load("lmcache.v1.multiprocess.transport.zmq_impl.wire",
                 os.path.join(root, mp, "transport", "zmq_impl", "wire.py"))
    base = _load("lmcache.v1.multiprocess.custom_types", os.path.join(root, mp, "custom_types.py"))
    later = _load("lmcache_later_custom_types", os.path.join(later_root, mp, "custom_types.py"))
    encoder = base.get_customized_encoder(None)

    def hx(b):
        return b.hex()

    def check(cond, what):
        if not cond:
            sys.exit("self-check failed: " + what)

    # --- op frames: every frozen id, a few names sent as strings, the _v3 aliases ---
    ops = []
    for name, op_id in wire.LEGACY_OPERATION_IDS.items():
        frame = wire.encode_operation(name)
        check(wire.decode_operation(frame) == name, "op " + name)
        ops.append({"name": name, "id": op_id, "hex": hx(frame)})
    for name in ("lookup", "get_chunk_size", "cb_register_rope_v3", "cb_unregister_rope_v3",
                 "cb_retrieve_pre_computed_v3"):
        frame = msgspec.msgpack.encode(name)  # how a name without a frozen id travels
        check(wire.decode_operation(frame) == name, "string op " + name)
        ops.append({"name": name, "id": None, "hex": hx(frame)})

    # --- requests ---
    requests = []
    uid = [0]

    def request(label, op, args, described):
        frames = [msgspec.msgpack.encode(uid[0]), wire.encode_operation(op)]
        frames += [encoder.encode(a) for a in args]
        uid[0] += 1
        requests.append({"name": label, "op": op, "args": described, "frames": [hx(f) for f in frames]})
        return frames

    def key_fields(k, schema):
        d = {"schema": schema, "model_name": k.model_name, "world_size": k.world_size,
             "worker_id": k.worker_id, "token_ids": list(k.token_ids), "start": k.start, "end": k.end,
             "request_id": k.request_id, "cache_salt": k.cache_salt}
        d["num_kv_readers"] = getattr(k, "num_kv_readers", 0)
        return d

    def typed_roundtrip(frame, cls, expected):
        decoded = msgspec.msgpack.decode(frame, type=cls)
        check(decoded == expected and getattr(decoded, "request_id", None) == getattr(expected, "request_id", None),
              "round trip of " + cls.__name__)

    tokens_512 = list(range(512))
    tokens_big = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1] + [7] * 245
    keys = [
        ("key.base.worker0", "BASE", base.IPCCacheServerKey("m", 1, 0, tuple(tokens_512), 0, 512, "req-1")),
        ("key.base.lookup_nil_worker", "BASE",
         base.IPCCacheServerKey("meta-llama/Llama-3.1-8B", 4, None, tuple(tokens_512 + [9, 9]), 0, 512, "r", "")),
        ("key.base.salted_wide_tokens", "BASE",
         base.IPCCacheServerKey("m", 2, 1, tuple(tokens_big), 0, 256, "cmpl-Ω", "tenant-a")),
        ("key.base.design_example", "BASE", base.IPCCacheServerKey("m", 1, None, (1, 2, 300), 0, 256, "r")),
        ("key.base.empty_tokens", "BASE", base.IPCCacheServerKey("m", 1, 0, (), 0, 0, "")),
        ("key.extended.readers", "EXTENDED",
         later.IPCCacheServerKey("m", 8, 3, tuple(tokens_512), 256, 512, "req-2", "s", None, 8, None)),
        ("key.extended.lookup", "EXTENDED",
         later.IPCCacheServerKey("m", 2, None, tuple(tokens_512), 0, 512, "req-3", "", None, 0, None)),
    ]
    key_frames = {}
    for label, schema, key in keys:
        cls = type(key)
        frames = request(label, "prepare_store", [key, 12345], [key_fields(key, schema), 12345])
        typed_roundtrip(frames[2], cls, key)
        key_frames[label] = key
    k0 = keys[0][2]
    lookup_key = keys[1][2]
    request("lookup", "lookup", [lookup_key, 4], [key_fields(lookup_key, "BASE"), 4])
    request("free_lookup_locks", "free_lookup_locks", [lookup_key, 4], [key_fields(lookup_key, "BASE"), 4])
    request("prepare_retrieve", "prepare_retrieve", [k0, 4242], [key_fields(k0, "BASE"), 4242])
    request("commit_store", "commit_store", [k0, 4242, b""], [key_fields(k0, "BASE"), 4242, {"bytes": ""}])
    request("commit_retrieve", "commit_retrieve", [k0, 2**40], [key_fields(k0, "BASE"), 2**40])
    request("query_prefetch_status", "query_prefetch_status", ["req-1"], ["req-1"])
    request("query_prefetch_lookup_hits", "query_prefetch_lookup_hits", ["req-1"], ["req-1"])
    request("wait_prefetch_status.float", "wait_prefetch_status", ["req-1", 0.5], ["req-1", {"float": 0.5}])
    request("wait_prefetch_status.int", "wait_prefetch_status", ["req-1", 3], ["req-1", 3])
    request("end_session", "end_session", ["req-1"], ["req-1"])
    request("clear.none", "clear", [], [])
    request("clear.force", "clear", [True], [True])
    request("get_chunk_size", "get_chunk_size", [], [])
    request("ping.scheduler", "ping", [None], [None])
    request("ping.instance", "ping", [31337], [31337])
    request("noop", "noop", [], [])
    request("unregister", "unregister_kv_cache_engine_driven_context", [31337], [31337])
    records = [base.BlockAllocationRecord("req-1", [1, 2], [5, 6])]
    request("report_block_allocation", "report_block_allocation", [31337, "m", records], [31337, "m", None])

    payloads = [
        ("register.base", "BASE",
         base.RegisterEngineDrivenContextPayload(31337, "m", 2, 16, 32, 1024, "bfloat16", False)),
        ("register.base.mla", "BASE",
         base.RegisterEngineDrivenContextPayload(1, "deepseek", 1, 64, 61, 576, "float16", True)),
        ("register.base.multi_group", "BASE",
         base.RegisterEngineDrivenContextPayload(2, "hybrid", 1, 16, 4, 128, "float16", False,
                                                 [base.GroupLayoutInfo(16, 2, 128, "float16", False)])),
        ("register.extended", "EXTENDED",
         later.RegisterEngineDrivenContextPayload(31337, "m", 2, 16, 32, 1024, "bfloat16", False, 16)),
        ("register.extended.kvweave", "EXTENDED",
         later.RegisterEngineDrivenContextPayload(3, "m", 1, 16, 32, 1024, "float16", False, None, [], [64],
                                                  None, True)),
    ]
    for label, schema, p in payloads:
        described = {"schema": schema, "instance_id": p.instance_id, "model_name": p.model_name,
                     "world_size": p.world_size, "block_size": p.block_size, "num_layers": p.num_layers,
                     "hidden_dim_size": p.hidden_dim_size, "dtype_str": p.dtype_str, "use_mla": p.use_mla,
                     "num_physical_slots": getattr(p, "num_physical_slots", None),
                     "multi_group_fields": [f for f in ("group_layouts", "engine_group_infos", "group_hidden_dim_sizes",
                                                        "group_layout_descs", "enable_l1_kvweave_quant")
                                            if getattr(p, f, None)]}
        frames = request(label, "register_kv_cache_engine_driven_context", [p], [described])
        check(msgspec.msgpack.decode(frames[2], type=type(p)) == p, "round trip of " + label)

    # --- keys LMCache's own decoder refuses (written as raw maps) ---
    invalid = []
    good = {"model_name": "m", "world_size": 1, "worker_id": 0, "token_ids": [1, 2], "start": 0, "end": 0,
            "request_id": "r", "cache_salt": ""}
    for label, change in (("salt_at", {"cache_salt": "a@b"}), ("salt_slash", {"cache_salt": "a/b"}),
                          ("salt_backslash", {"cache_salt": "a\\b"}), ("salt_nul", {"cache_salt": "a\x00b"}),
                          ("salt_too_long", {"cache_salt": "x" * 129}), ("missing_start", {"start": None}),
                          ("token_not_int", {"token_ids": [1, "2"]}), ("worker_id_str", {"worker_id": "0"})):
        raw = dict(good)
        raw.update(change)
        raw = {k: v for k, v in raw.items() if v is not None}
        frame = msgspec.msgpack.encode(raw)
        try:
            msgspec.msgpack.decode(frame, type=base.IPCCacheServerKey)
            sys.exit("self-check failed: LMCache accepts invalid key " + label)
        except (msgspec.ValidationError, ValueError):
            pass
        invalid.append({"name": label, "hex": hx(frame)})
    salt_128 = dict(good, cache_salt="x" * 128)
    msgspec.msgpack.decode(msgspec.msgpack.encode(salt_128), type=base.IPCCacheServerKey)

    # --- replies: plain msgspec.msgpack.encode of the result, after the server's coercion ---
    replies = []

    def reply(label, op, result, described):
        frame = msgspec.msgpack.encode(result)
        replies.append({"name": label, "op": op, "result": described, "hex": hx(frame)})

    reply("get_chunk_size", "get_chunk_size", int(256), {"int": 256})
    reply("ping", "ping", bool(True), {"bool": True})
    reply("commit_store.false", "commit_store", bool(False), {"bool": False})
    reply("noop", "noop", "OK", {"str": "OK"})
    reply("query_prefetch_status", "query_prefetch_status", int(70000), {"int": 70000})
    reply("query_prefetch_status.big", "query_prefetch_status", int(2**33), {"int": 2**33})
    reg = later.RegisterEngineDrivenContextResponse
    for label, value in (("register.accepted", reg("lmcache4j_pool_1", 8 * 2**30)),
                         ("register.default", reg()),
                         ("register.rejected", reg(error="lmcache4j serves single-group KV layouts only")),
                         ("register.scratch", reg("p", 2**20, 4096, 65536))):
        reply(label, "register_kv_cache_engine_driven_context", value,
              {"RegisterEngineDrivenContextResponse": {"shm_name": value.shm_name, "pool_size": value.pool_size,
                                                       "scratch_offset": value.scratch_offset,
                                                       "scratch_size": value.scratch_size, "error": value.error}})
    slot = lambda off: {"offset": off, "length": 2 * 32 * 256 * 1024 * 2, "shape": [2, 32, 256, 1024],
                        "dtype": "bfloat16"}
    mla_slot = {"offset": 2**33 + 5, "length": 61 * 256 * 576 * 2, "shape": [61, 256, 576], "dtype": "float16"}
    store_contexts = (("prepare_store.two_slots", {"slots": [slot(0), slot(33554432)], "chunk_indices": [0, 2]}),
                      ("prepare_store.all_cached", {"slots": [], "chunk_indices": []}),
                      ("prepare_store.mla", {"slots": [mla_slot], "chunk_indices": [1]}),
                      ("prepare_store.pickle_mode", {}))
    for label, ctx in store_contexts:
        reply(label, "prepare_store", later.PrepareStoreResponse(ctx), {"PrepareStoreResponse": {"context": ctx}})
    for label, value in (("prepare_retrieve.hit", later.PrepareRetrieveResponse(True, b"", {"slots": [slot(0), mla_slot]})),
                         ("prepare_retrieve.miss", later.PrepareRetrieveResponse(False))):
        reply(label, "prepare_retrieve", value,
              {"PrepareRetrieveResponse": {"success": value.success, "context": value.context}})

    print(json.dumps({"generator": "generate-mp-frames.py", "msgspec": msgspec.__version__,
                      "wire_pin": "0be164ed091d95c19a6a1f37005609d33dae7efe",
                      "custom_types_base": "00d6dd185e705e15daa63c01950db4e58a70578d",
                      "custom_types_extended": "code-index id 69707146292",
                      "ops": ops, "requests": requests, "invalid_keys": invalid, "replies": replies},
                     indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()

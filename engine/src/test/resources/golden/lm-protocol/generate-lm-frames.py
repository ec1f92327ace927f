#!/usr/bin/env python3
"""Writes lm-frames.json: lm:// frames packed and unpacked by LMCache's own protocol.py.

Usage (Debian's python3; nothing else is needed):
    python3 generate-lm-frames.py /path/to/LMCache > lm-frames.json

/path/to/LMCache is a checkout of github.com/LMCache/LMCache; its lmcache/v1/protocol.py is
executed unmodified. That file imports torch, lmcache.utils.CacheEngineKey and
lmcache.v1.memory_management.MemoryFormat only for names it uses as values; stand-ins for those
three are installed below so the real ClientMetaMessage / ServerMetaMessage / RemoteMetadata code
does the packing (struct.pack in native mode). Nothing of LMCache's is copied into this file.
"""
import enum
import hashlib
import importlib.util
import json
import sys
import types

if len(sys.argv) != 2:
    sys.exit(__doc__)
checkout = sys.argv[1]


# --- stand-ins for the names protocol.py imports --------------------------------------------
class _DType:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


torch = types.ModuleType("torch")
for _name in ["half", "float16", "bfloat16", "float", "float32", "float64", "double", "uint8",
              "int8", "int16", "int32", "int64", "bool", "float8_e4m3fn", "float8_e5m2"]:
    setattr(torch, _name, _DType(_name))
# torch aliases: half is float16, float is float32, double is float64.
torch.half = torch.float16
torch.float = torch.float32
torch.double = torch.float64
torch.dtype = _DType
torch.Size = tuple
sys.modules["torch"] = torch


class CacheEngineKey:
    """Holds a key string; protocol.py only calls to_string() and from_string()."""

    def __init__(self, s):
        self.s = s

    def to_string(self):
        return self.s

    @staticmethod
    def from_string(s):
        return CacheEngineKey(s)


class MemoryFormat(enum.Enum):
    """LMCache's MemoryFormat codes (lmcache/v1/memory_management.py)."""
    UNDEFINED = 0
    KV_2LTD = 1
    KV_T2D = 2
    KV_2TD = 3
    BINARY = 4
    BINARY_BUFFER = 5
    KV_MLA_FMT = 6


for _mod, _attrs in [("lmcache", {}), ("lmcache.v1", {}),
                     ("lmcache.utils", {"CacheEngineKey": CacheEngineKey}),
                     ("lmcache.v1.memory_management", {"MemoryFormat": MemoryFormat})]:
    m = types.ModuleType(_mod)
    m.__dict__.update(_attrs)
    sys.modules[_mod] = m

spec = importlib.util.spec_from_file_location("lmcache.v1.protocol", checkout + "/lmcache/v1/protocol.py")
protocol = importlib.util.module_from_spec(spec)
spec.loader.exec_module(protocol)
C = protocol.Constants

# --- the frames ------------------------------------------------------------------------------
LLAMA_KEY = "meta-llama/Llama-3.1-8B@1@0@" + hashlib.sha256(b"lmcache4j golden").hexdigest() + "@bfloat16"
SHORT_KEY = "m@2@1@00ff@half@tag%x"
DUMMY = dict(length=0, fmt=MemoryFormat(1), dtype=torch.float16, shape=torch.Size([0, 0, 0, 0]))

clients = [
    ("put_llama_chunk", protocol.ClientMetaMessage(C.CLIENT_PUT, CacheEngineKey(LLAMA_KEY), 2 * 32 * 256 * 1024 * 2,
                                                    MemoryFormat.KV_2LTD, torch.bfloat16, torch.Size([2, 32, 256, 1024]))),
    ("put_fp32_cpu_location", protocol.ClientMetaMessage(C.CLIENT_PUT, CacheEngineKey(SHORT_KEY), 64,
                                                          MemoryFormat.KV_T2D, torch.float32, torch.Size([1, 2, 2, 4]),
                                                          "LocalCPUBackend")),
    ("put_binary_disk_location", protocol.ClientMetaMessage(C.CLIENT_PUT, CacheEngineKey(SHORT_KEY), 12,
                                                             MemoryFormat.BINARY_BUFFER, torch.uint8,
                                                             torch.Size([12, 0, 0, 0]), "LocalDiskBackend")),
    ("get", protocol.ClientMetaMessage(C.CLIENT_GET, CacheEngineKey(LLAMA_KEY), **DUMMY)),
    ("exist", protocol.ClientMetaMessage(C.CLIENT_EXIST, CacheEngineKey(SHORT_KEY), **DUMMY)),
    ("health", protocol.ClientMetaMessage(C.CLIENT_HEALTH, CacheEngineKey("lmcache4j@1@0@0@half"), **DUMMY)),
    ("list", protocol.ClientMetaMessage(C.CLIENT_LIST, CacheEngineKey("lmcache4j@1@0@0@half"), **DUMMY)),
]
servers = [
    ("get_hit_llama_chunk", protocol.ServerMetaMessage(C.SERVER_SUCCESS, 2 * 32 * 256 * 1024 * 2, MemoryFormat.KV_2LTD,
                                                        torch.bfloat16, torch.Size([2, 32, 256, 1024]))),
    ("get_hit_fp8_cpu_location", protocol.ServerMetaMessage(C.SERVER_SUCCESS, 4096, MemoryFormat.KV_MLA_FMT,
                                                             torch.float8_e4m3fn, torch.Size([1, 4, 256, 4]),
                                                             "LocalCPUBackend")),
    ("miss", protocol.ServerMetaMessage(C.SERVER_FAIL, **DUMMY)),
    ("success_code_only", protocol.ServerMetaMessage(C.SERVER_SUCCESS, **DUMMY)),
]
metadata = [
    ("llama_chunk", protocol.RemoteMetadata(2 * 32 * 256 * 1024 * 2, torch.Size([2, 32, 256, 1024]), torch.bfloat16,
                                            MemoryFormat.KV_2LTD)),
]


def fields(msg):
    out = {}
    for k, v in vars(msg).items():
        if k == "key":
            v = v.to_string()
        elif k == "location":
            v = protocol.LOCATION_TO_INT[v]
        elif isinstance(v, enum.Enum):
            v = v.value
        elif isinstance(v, _DType):
            v = protocol.DTYPE_TO_INT[v]
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out


def check_round_trip(cls, frame, msg):
    back = cls.deserialize(frame)
    assert fields(back) == fields(msg), (fields(back), fields(msg))


result = {"source": "LMCache lmcache/v1/protocol.py, executed by generate-lm-frames.py",
          "client_frame_bytes": protocol.ClientMetaMessage.packlength(),
          "server_frame_bytes": protocol.ServerMetaMessage.packlength(),
          "client": [], "server": [], "metadata": []}
for name, msg in clients:
    frame = msg.serialize()
    check_round_trip(protocol.ClientMetaMessage, frame, msg)
    result["client"].append({"name": name, "fields": fields(msg), "hex": frame.hex()})
for name, msg in servers:
    frame = msg.serialize()
    check_round_trip(protocol.ServerMetaMessage, frame, msg)
    result["server"].append({"name": name, "fields": fields(msg), "hex": frame.hex()})
for name, msg in metadata:
    result["metadata"].append({"name": name, "hex": msg.serialize().hex()})


# --- key strings, from LMCache's CacheEngineKey / LayerCacheEngineKey (lmcache/utils.py) -------------
def lmcache_key_classes():
    """Executes the dtype tables and the two key classes of lmcache/utils.py, extracted with ast.

    utils.py as a whole imports much more (cachetools, nvtx, LMCache's logging); these top-level
    statements need only torch's dtypes."""
    import ast
    source = open(checkout + "/lmcache/utils.py", encoding="utf-8").read()
    lines = source.splitlines()

    def statement(node):  # its source lines, decorators included (get_source_segment leaves them out)
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return "\n".join(lines[first - 1:node.end_lineno])

    wanted = []
    for node in ast.parse(source).body:
        names = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if (names and names[0] in ("TORCH_DTYPE_TO_STR_DTYPE", "STR_DTYPE_TO_TORCH_DTYPE")) \
                or (isinstance(node, ast.If) and "hasattr(torch" in ast.get_source_segment(source, node)) \
                or (isinstance(node, ast.ClassDef) and node.name in ("CacheEngineKey", "LayerCacheEngineKey")):
            wanted.append(statement(node))
    import dataclasses
    import typing
    module = types.ModuleType("lmcache_utils_keys")  # dataclass looks its class's module up in sys.modules
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    namespace.update({"torch": torch, "dataclass": dataclasses.dataclass, "field": dataclasses.field})
    namespace.update({n: getattr(typing, n) for n in ("Any", "List", "Optional", "Tuple", "Union")})
    exec(compile("from __future__ import annotations\n" + "\n\n".join(wanted), "lmcache/utils.py", "exec"), namespace)
    return namespace["CacheEngineKey"], namespace["LayerCacheEngineKey"]


try:
    Key, LayerKey = lmcache_key_classes()
except FileNotFoundError:
    Key = None
if Key is not None:
    digest = hashlib.sha256(b"lmcache4j key").digest()
    cases = [
        ("sha256_bytes_bf16", dict(model_name="meta-llama/Llama-3.1-8B", world_size=1, worker_id=0,
                                   chunk_hash=digest, dtype=torch.bfloat16)),
        ("leading_zero_bytes_half_tags", dict(model_name="m", world_size=2, worker_id=1,
                                              chunk_hash=bytes.fromhex("00ff10ab"), dtype=torch.float16,
                                              request_configs={"lmcache.tag.user": "alice", "other": "x"})),
        ("fp8", dict(model_name="Qwen/Qwen3-8B", world_size=8, worker_id=7, chunk_hash=digest[:8],
                     dtype=torch.float8_e4m3fn)),
    ]
    result["keys"] = []
    for name, kw in cases:
        k = Key(**kw)
        layer = LayerKey(layer_id=7, **kw)
        result["keys"].append({"name": name, "model": kw["model_name"], "world_size": kw["world_size"],
                               "worker_id": kw["worker_id"], "chunk_hash": kw["chunk_hash"].hex(),
                               "dtype": k._dtype_str,
                               "tags": [[t, v] for t, v in (k.tags or ())],
                               "key": k.to_string(), "layer7_key": layer.to_string()})

json.dump(result, sys.stdout, indent=1)
sys.stdout.write("\n")

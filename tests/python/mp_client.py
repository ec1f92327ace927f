#!/usr/bin/env python3
"""A client of LMCache's multiprocess (MP) server protocol, for lmcache4j's mp-server tests.

It speaks the wire of LMCache `dev` after PR #5161 (wire pin: lmcache/v1/multiprocess/transport/
zmq_impl/wire.py at 0be164ed091d95c19a6a1f37005609d33dae7efe; docs/design/mp-server.md lists the
supporting reads) with the real msgspec and pyzmq of tests/python/requirements.txt:

  * a DEALER connected to the server's ROUTER; a request is the frames [uid, op, arg1 ... argN],
    each a msgspec-msgpack value, op the frozen integer id; a reply is [uid, op] plus one frame
    when the result is not None;
  * keys are IPCCacheServerKey maps, the engine-driven context payload and the responses are
    msgspec Structs with LMCache's field names and order (encoded as maps, every field present);
  * the engine-driven shared-memory transfer: the pool named at registration is opened with
    multiprocessing.shared_memory, slots are written before commit_store and read after
    prepare_retrieve, as LMCache's transfer_context/shm.py does with torch.frombuffer.

LMCache's own client classes cannot run here (the lmcache package is not installable on these
machines, and its client imports a dozen of its modules), so this file writes the same frames
from the documented field lists; the golden frames under mp-server/src/test/resources/golden/mp/ pin
them byte for byte.

Usage: mp_client.py --port N SCENARIO [options]; prints one JSON object on stdout, exit 0 when
every check of the scenario held, 1 otherwise (the JSON says which failed).
"""
import argparse
import hashlib
import json
import sys
import time
from multiprocessing import resource_tracker, shared_memory
from typing import Any, Optional

import msgspec
import zmq

OPS = {
    "lookup": 8, "query_prefetch_status": 9, "wait_prefetch_status": 10,
    "query_prefetch_lookup_hits": 11, "free_lookup_locks": 12, "end_session": 13,
    "register_kv_cache_engine_driven_context": 14, "unregister_kv_cache_engine_driven_context": 15,
    "prepare_store": 16, "commit_store": 17, "prepare_retrieve": 18, "commit_retrieve": 19,
    "clear": 20, "get_chunk_size": 21, "ping": 22, "noop": 24,
    "register_kv_cache": 1, "store": 6, "retrieve": 7,
}


class IPCCacheServerKey(msgspec.Struct):
    model_name: str
    world_size: int
    worker_id: Optional[int]
    token_ids: tuple
    start: int
    end: int
    request_id: str
    cache_salt: str = ""


class RegisterEngineDrivenContextPayload(msgspec.Struct):
    instance_id: int
    model_name: str
    world_size: int
    block_size: int
    num_layers: int
    hidden_dim_size: int
    dtype_str: str
    use_mla: bool


class RegisterEngineDrivenContextResponse(msgspec.Struct):
    shm_name: str = ""
    pool_size: int = 0
    scratch_offset: int = 0
    scratch_size: int = 0
    error: Optional[str] = None


class PrepareStoreResponse(msgspec.Struct):
    context: dict = {}


class PrepareRetrieveResponse(msgspec.Struct):
    success: bool
    data: bytes = b""
    context: dict = {}


RESPONSE_TYPES = {
    "register_kv_cache_engine_driven_context": RegisterEngineDrivenContextResponse,
    "prepare_store": PrepareStoreResponse,
    "prepare_retrieve": PrepareRetrieveResponse,
}
ITEM_SIZES = {"float16": 2, "bfloat16": 2, "float32": 4, "uint8": 1, "float8_e4m3fn": 1}


class MpError(Exception):
    pass


class Client:
    """One DEALER; one request at a time, its reply matched by uid."""

    def __init__(self, url: str, timeout_ms: int):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
        self.sock.connect(url)
        self.uid = 0

    def call(self, op: str, *args: Any) -> Any:
        uid = self.uid
        self.uid += 1
        frames = [msgspec.msgpack.encode(uid), msgspec.msgpack.encode(OPS[op])]
        frames += [msgspec.msgpack.encode(a) for a in args]
        self.sock.send_multipart(frames)
        while True:
            try:
                reply = self.sock.recv_multipart()
            except zmq.Again:
                raise MpError(f"no reply to {op} within the timeout")
            if msgspec.msgpack.decode(reply[0]) != uid:
                continue  # a late reply to an earlier, timed-out call
            if reply[1] != frames[1]:
                raise MpError(f"reply op {reply[1]!r} for request op {frames[1]!r}")
            if len(reply) == 2:
                return None
            t = RESPONSE_TYPES.get(op)
            return msgspec.msgpack.decode(reply[2], type=t) if t else msgspec.msgpack.decode(reply[2])

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()


def chunk_bytes(rank: int, chunk: int, tokens: list, length: int) -> bytes:
    """Bytes that depend on the rank, the chunk and the prompt, so a misplaced byte shows."""
    seed = f"{rank}:{chunk}:{tokens[:8]}:{len(tokens)}".encode()
    return hashlib.shake_256(seed).digest(length)


class Rank:
    """One tensor-parallel worker: its own instance id, its registration, its view of the pool."""

    def __init__(self, client: Client, args, rank: int):
        self.client = client
        self.args = args
        self.rank = rank
        self.instance_id = args.instance_base + rank
        payload = RegisterEngineDrivenContextPayload(
            instance_id=self.instance_id, model_name=args.model, world_size=args.world_size,
            block_size=16, num_layers=args.layers, hidden_dim_size=args.hidden, dtype_str=args.dtype,
            use_mla=False)
        resp = client.call("register_kv_cache_engine_driven_context", payload)
        if resp.error:
            raise MpError(f"registration refused: {resp.error}")
        self.shm = shared_memory.SharedMemory(name=resp.shm_name.lstrip("/"))
        # As LMCache's worker does: the server owns the segment, this process must not unlink it.
        try:
            resource_tracker.unregister(self.shm._name, "shared_memory")
        except Exception:
            pass
        self.pool_size = resp.pool_size

    def key(self, tokens, start, end, request_id, worker=True):
        return IPCCacheServerKey(self.args.model, self.args.world_size, self.rank if worker else None,
                                 tuple(tokens), start, end, request_id, self.args.salt)

    def store(self, tokens, start, end, request_id) -> dict:
        key = self.key(tokens, start, end, request_id)
        ctx = self.client.call("prepare_store", key, self.instance_id).context
        slots = ctx.get("slots", [])
        indices = ctx.get("chunk_indices", [])
        first = start // self.args.chunk
        for slot, index in zip(slots, indices):
            data = chunk_bytes(self.rank, first + index, tokens, slot["length"])
            self.shm.buf[slot["offset"]:slot["offset"] + slot["length"]] = data
        committed = self.client.call("commit_store", key, self.instance_id, b"") if slots else True
        return {"slots": len(slots), "committed": bool(committed), "shapes": [s["shape"] for s in slots],
                "dtypes": sorted({s["dtype"] for s in slots})}

    def retrieve(self, tokens, start, end, request_id) -> dict:
        key = self.key(tokens, start, end, request_id)
        resp = self.client.call("prepare_retrieve", key, self.instance_id)
        if not resp.success:
            return {"success": False, "chunks": 0, "wrong_bytes": 0}
        wrong = 0
        slots = resp.context.get("slots", [])
        first = start // self.args.chunk
        for i, slot in enumerate(slots):
            got = bytes(self.shm.buf[slot["offset"]:slot["offset"] + slot["length"]])
            want = chunk_bytes(self.rank, first + i, tokens, slot["length"])
            wrong += sum(1 for a, b in zip(got, want) if a != b) if got != want else 0
        committed = self.client.call("commit_retrieve", key, self.instance_id)
        return {"success": True, "chunks": len(slots), "wrong_bytes": wrong, "committed": bool(committed)}

    def close(self, unregister=True):
        self.shm.close()
        if unregister:
            self.client.call("unregister_kv_cache_engine_driven_context", self.instance_id)


def lookup(client: Client, args, tokens, request_id) -> int:
    """What vLLM's scheduler does: lookup with no worker id, then poll until the hit count comes."""
    end = len(tokens) - len(tokens) % args.chunk
    key = IPCCacheServerKey(args.model, args.world_size, None, tuple(tokens), 0, end, request_id, args.salt)
    client.call("lookup", key, args.world_size)
    deadline = time.time() + 10
    while time.time() < deadline:
        hits = client.call("query_prefetch_status", request_id)
        if hits is not None:
            return hits
        time.sleep(0.005)
    raise MpError("the prefetch status never came")


def prompt(seed: int, n: int) -> list:
    return [(i * 7919 + seed * 104729) % 128000 for i in range(n)]


def scenario_full(client: Client, args) -> dict:
    """register -> store -> store again -> lookup -> retrieve -> miss -> end session -> unregister."""
    out = {"checks": {}}
    c = out["checks"]
    out["chunk_size"] = client.call("get_chunk_size")
    c["chunk_size"] = out["chunk_size"] == args.chunk
    c["ping"] = client.call("ping", None) is True
    c["noop"] = client.call("noop") == "OK"
    ranks = [Rank(client, args, r) for r in range(args.world_size)]
    tokens = prompt(1, args.chunks * args.chunk + args.chunk // 2)  # a partial last chunk is never stored
    end = args.chunks * args.chunk
    stores = [r.store(tokens, 0, end, "req-1") for r in ranks]
    out["stores"] = stores
    c["stored_every_chunk"] = all(s["slots"] == args.chunks and s["committed"] for s in stores)
    c["slot_shape"] = all(shape == [2, args.layers, args.chunk, args.hidden]
                          for s in stores for shape in s["shapes"])
    again = [r.store(tokens, 0, end, "req-1") for r in ranks]
    c["second_store_all_cached"] = all(s["slots"] == 0 for s in again)
    out["lookup_hits"] = lookup(client, args, tokens, "req-2")
    c["lookup_finds_every_chunk"] = out["lookup_hits"] == args.chunks
    c["status_answers_once"] = client.call("query_prefetch_status", "req-2") == 0
    got = [r.retrieve(tokens, 0, end, "req-2") for r in ranks]
    out["retrieves"] = got
    c["retrieve_every_byte"] = all(g["success"] and g["chunks"] == args.chunks and g["wrong_bytes"] == 0
                                   for g in got)
    other = prompt(2, args.chunks * args.chunk)
    out["miss_hits"] = lookup(client, args, other, "req-3")
    c["other_prompt_misses"] = out["miss_hits"] == 0
    c["retrieve_of_a_miss_fails"] = ranks[0].retrieve(other, 0, end, "req-3")["success"] is False
    # Tensor parallelism: rank 1 stores only the first chunk of a new prompt; the lookup counts 1.
    if args.world_size > 1:
        partial = prompt(3, 3 * args.chunk)
        ranks[0].store(partial, 0, 3 * args.chunk, "req-4")
        ranks[1].store(partial, 0, args.chunk, "req-4")
        out["tp_partial_hits"] = lookup(client, args, partial, "req-5")
        c["tp_counts_chunks_every_rank_stored"] = out["tp_partial_hits"] == 1
        key = IPCCacheServerKey(args.model, args.world_size, None, tuple(partial), 0, 3 * args.chunk, "req-5",
                                args.salt)
        client.call("free_lookup_locks", key, args.world_size)
    for req in ("req-1", "req-2", "req-3", "req-4", "req-5"):
        client.call("end_session", req)
    for r in ranks:
        r.close()
    c["ping_after"] = client.call("ping", None) is True
    return out


def scenario_store(client: Client, args) -> dict:
    """Registers, stores one prompt and exits without unregistering (the server keeps the chunks)."""
    ranks = [Rank(client, args, r) for r in range(args.world_size)]
    tokens = prompt(9, args.chunks * args.chunk)
    stores = [r.store(tokens, 0, len(tokens), "keep") for r in ranks]
    for r in ranks:
        r.close(unregister=False)
    return {"checks": {"stored": all(s["committed"] for s in stores)}, "stores": stores}


def scenario_retrieve(client: Client, args) -> dict:
    """Looks the prompt of scenario_store up and retrieves it; after a restart it must be a miss."""
    ranks = [Rank(client, args, r) for r in range(args.world_size)]
    tokens = prompt(9, args.chunks * args.chunk)
    hits = lookup(client, args, tokens, "again")
    got = [r.retrieve(tokens, 0, hits * args.chunk, "again") for r in ranks] if hits else []
    for r in ranks:
        r.close()
    return {"checks": {"no_wrong_bytes": all(g["wrong_bytes"] == 0 for g in got)}, "lookup_hits": hits,
            "retrieves": got}


SCENARIOS = {"full": scenario_full, "store": scenario_store, "retrieve": scenario_retrieve}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model", default="lmcache4j/mp-test")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--chunk", type=int, default=256)
    p.add_argument("--chunks", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--salt", default="")
    p.add_argument("--instance-base", type=int, default=4000)
    p.add_argument("--timeout-ms", type=int, default=10000)
    args = p.parse_args()
    client = Client(f"tcp://{args.host}:{args.port}", args.timeout_ms)
    try:
        out = SCENARIOS[args.scenario](client, args)
        out["ok"] = all(out["checks"].values())
    except MpError as e:
        out = {"ok": False, "error": str(e)}
    finally:
        client.close()
    print(json.dumps(out, sort_keys=True))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

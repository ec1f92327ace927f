#!/usr/bin/env python3
"""Subscribes to an engine's KV events as vLLM's KV-aware routers do, for lmcache4j's KvEventsTest.

vLLM publishes KVEventBatch messages (vllm/distributed/kv_events.py) on a ZeroMQ PUB socket as the
frames [topic, seq (8 bytes, big-endian), payload], the payload msgspec's msgpack of a KVEventBatch
(array_like, omit_defaults, events tagged by class name); a router subscribes to the topic and
decodes each payload with msgspec.msgpack.Decoder(type=KVEventBatch), and asks the publisher's
ROUTER for missed batches by sending a start sequence number (8 bytes), getting [seq, payload]
frames back until seq -1. This script does exactly that, with the event classes declared as vLLM
declares them (fields, order, defaults, struct options), and prints what it decoded:

  {"event": "ready"}                                  the SUB socket is bound/connected
  {"event": "batch", "seq": n, "same_bytes": bool, "events": [...]}   per live batch; same_bytes: msgspec
                                                      re-encodes the decoded batch to the payload's bytes
  {"event": "replay", "batches": n, "seqs": [...], "same_payloads": bool, "events": [...]}
                                                      when "replay" arrives on stdin (with --replay)
  {"event": "done", "events": n}                      on "quit" on stdin, or after --seconds

    kv_events_subscriber.py --bind tcp://127.0.0.1:P | --connect tcp://host:P [--topic T]
        [--replay tcp://127.0.0.1:R] [--seconds S]
"""
import argparse
import json
import queue
import sys
import threading
import time
from typing import Any

import msgspec
import zmq


class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class KVCacheEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    """Base class for all KV cache-related events"""


class BlockStored(KVCacheEvent):
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[tuple[Any, ...] | None] | None = None
    group_idx: int | None = None


class BlockRemoved(KVCacheEvent):
    block_hashes: list[int]
    medium: str | None
    group_idx: int | None = None


class AllBlocksCleared(KVCacheEvent):
    pass


class KVEventBatch(EventBatch):
    events: list[BlockStored | BlockRemoved | AllBlocksCleared]


def emit(event, **fields):
    sys.stdout.write(json.dumps({"event": event, **fields}, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def describe(e):
    if isinstance(e, BlockStored):
        return {"type": "BlockStored", "block_hashes": e.block_hashes, "parent_block_hash": e.parent_block_hash,
                "token_ids": e.token_ids, "block_size": e.block_size, "lora_id": e.lora_id, "medium": e.medium,
                "lora_name": e.lora_name}
    if isinstance(e, BlockRemoved):
        return {"type": "BlockRemoved", "block_hashes": e.block_hashes, "medium": e.medium}
    return {"type": "AllBlocksCleared"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bind")
    p.add_argument("--connect")
    p.add_argument("--topic", default="")
    p.add_argument("--replay")
    p.add_argument("--seconds", type=float, default=60.0)
    args = p.parse_args()
    decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
    encoder = msgspec.msgpack.Encoder()
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt_string(zmq.SUBSCRIBE, args.topic)
    if args.bind:
        sub.bind(args.bind)
    else:
        sub.connect(args.connect)
    emit("ready")
    commands = queue.Queue()
    threading.Thread(target=lambda: [commands.put(line.strip()) for line in sys.stdin], daemon=True).start()
    deadline = time.monotonic() + args.seconds
    seen = 0
    payloads = {}
    while time.monotonic() < deadline:
        try:
            command = commands.get_nowait()
        except queue.Empty:
            command = None
        if command == "quit":
            break
        if command == "replay" and args.replay:
            replay(ctx, args.replay, decoder, payloads, deadline)
        if not sub.poll(50):
            continue
        topic, seq_bytes, payload = sub.recv_multipart()
        seq = int.from_bytes(seq_bytes, "big")
        batch = decoder.decode(payload)
        payloads[seq] = payload
        seen += len(batch.events)
        emit("batch", seq=seq, topic=topic.decode(), same_bytes=encoder.encode(batch) == payload,
             events=[describe(e) for e in batch.events])
    emit("done", events=seen)
    sub.close(0)
    ctx.term()
    return 0


def replay(ctx, endpoint, decoder, payloads, deadline):
    """Asks for every batch from seq 0, as a router that missed some does; prints what came back."""
    socket = ctx.socket(zmq.DEALER)
    socket.connect(endpoint)
    socket.send_multipart([b"", (0).to_bytes(8, "big")])
    seqs, events, same = [], [], True
    while time.monotonic() < deadline:
        if not socket.poll(100):
            continue
        frames = socket.recv_multipart()
        seq = int.from_bytes(frames[-2], "big", signed=True)
        if seq == -1:
            break
        batch = decoder.decode(frames[-1])
        seqs.append(seq)
        events.extend(describe(e) for e in batch.events)
        if seq in payloads and payloads[seq] != frames[-1]:
            same = False
    socket.close(0)
    emit("replay", batches=len(seqs), seqs=seqs, same_payloads=same, events=events)


if __name__ == "__main__":
    sys.exit(main())

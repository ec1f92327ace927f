#!/usr/bin/env python3
"""The scheduler side of LMCache's asynchronous lookup, as LMCache builds it, for lmcache4j's golden test.

Builds the request frames the way LMCache's LMCacheAsyncLookupClient.lookup does (LMCache/LMCache
lmcache/v1/lookup_client/lmcache_async_lookup_client.py at b8788cd32e1466e259c3e899ad462009a884bc40):
[lookup_id utf-8, msgpack(hashes), msgpack(offsets), "k%v@k%v" utf-8]. LMCache encodes the two lists
with msgspec.msgpack.Encoder, and so does this script (the real msgspec, in the tests' Python
environment that ./lmcache4j test creates).

Then binds PULL on the scheduler URL, connects PUSH to the worker URL, sends the request, and reads
the answer as LMCache's process_responses_from_workers does (2 frames, int.from_bytes(frame, "big")).

Input: one JSON object on the command line: {"worker", "scheduler", "lookup_id", "hashes", "offsets",
"request_configs"}. Output: JSON lines {"event": "frames", "frames": [hex, ...]} then
{"event": "answer", "lookup_id": ..., "hits": ..., "hit_frame_bytes": 4}.
"""
import json
import sys

import msgspec
import zmq

ENCODER = msgspec.msgpack.Encoder()


def request_frames(lookup_id, hashes, offsets, request_configs):
    request_configs_str = ""
    if request_configs is not None and len(request_configs) != 0:
        request_configs_str = "@".join([f"{k}%{v}" for k, v in request_configs.items()])
    return [
        lookup_id.encode("utf-8"),
        ENCODER.encode(hashes),
        ENCODER.encode(offsets),
        request_configs_str.encode("utf-8"),
    ]


def main():
    spec = json.loads(sys.argv[1])
    frames = request_frames(spec["lookup_id"], spec["hashes"], spec["offsets"], spec["request_configs"])
    print(json.dumps({"event": "frames", "frames": [f.hex() for f in frames]}), flush=True)
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.setsockopt(zmq.LINGER, 0)
    pull.bind(spec["scheduler"])
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(spec["worker"])
    push.send_multipart(frames, copy=False)
    if not pull.poll(20000):
        print(json.dumps({"event": "timeout"}), flush=True)
        sys.exit(2)
    answer = pull.recv_multipart()
    assert len(answer) == 2, f"expected 2 frames, got {len(answer)}"
    print(json.dumps({"event": "answer", "lookup_id": answer[0].decode("utf-8"),
                      "hits": int.from_bytes(answer[1], "big"), "hit_frame_bytes": len(answer[1])}), flush=True)
    push.close()
    pull.close()
    ctx.term()


if __name__ == "__main__":
    main()

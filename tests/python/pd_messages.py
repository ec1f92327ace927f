#!/usr/bin/env python3
"""LMCache's PD messages through the real msgspec, for lmcache4j's PdMessagesMsgspecTest.

The structs below declare the fields LMCache's lmcache/v1/storage_backend/pd_backend.py (at
07e0786947f9a4bf585563d280c7aee3882adecf) declares for its tagged PD messages: a base struct with
tag=True, and AllocRequest, AllocResponse and ProxyNotif under it, decoded as their union.

Input: one JSON object on the command line: {"encode": [message, ...], "decode": [hex, ...]}, where a
message is {"type": name, fields...}. Output: one JSON object: {"encoded": [hex, ...]} (msgspec's bytes of
each message), {"decoded": [message, ...]} (each hex decoded as the union, with its type).
"""
import json
import sys
from typing import Union

import msgspec


class PdMessage(msgspec.Struct, tag=True):
    pass


class AllocRequest(PdMessage):
    keys: list[str]
    fmt: int
    shape: list[int]
    dtype: str
    last_chunk_toks: int


class AllocResponse(PdMessage):
    already_sent_indexes: list[int]
    remote_indexes: list[int]


class ProxyNotif(PdMessage):
    req_id: str


TYPES = {"AllocRequest": AllocRequest, "AllocResponse": AllocResponse, "ProxyNotif": ProxyNotif}
UNION = Union[AllocRequest, AllocResponse, ProxyNotif]


def main():
    spec = json.loads(sys.argv[1])
    encoded = []
    for message in spec["encode"]:
        fields = dict(message)
        cls = TYPES[fields.pop("type")]
        encoded.append(msgspec.msgpack.encode(cls(**fields)).hex())
    decoded = []
    for hex_bytes in spec["decode"]:
        m = msgspec.msgpack.decode(bytes.fromhex(hex_bytes), type=UNION)
        out = {"type": type(m).__name__}
        out.update(msgspec.structs.asdict(m))
        decoded.append(out)
    print(json.dumps({"encoded": encoded, "decoded": decoded}))


if __name__ == "__main__":
    main()

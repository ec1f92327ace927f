#!/usr/bin/env python3
"""Writes controller-keys.json: the integer chunk keys of LMCache's control plane, for lmcache4j's
ControllerKeysGoldenTest.

    ../../../../../../.cache/python/bin/python generate-controller-keys.py > controller-keys.json

Two schemes, with vLLM's hashing (vllm/utils/hashing.py sha256_cbor: SHA-256 of
cbor2.dumps(obj, canonical=True); vllm/v1/core/kv_cache_utils.py init_none_hash: NONE_HASH =
sha256_cbor(PYTHONHASHSEED)) and the real cbor2 (pinned in tests/python/requirements.txt):

* "lmcache": LMCache's token database (lmcache/v1/token_database.py, the version with
  _normalize_hash_to_int, LMCache PR #2999): NONE_HASH folded to int.from_bytes(h[:8], "big"), then
  key_i = int.from_bytes(sha256_cbor((key_{i-1}, tuple(chunk_i), ()))[:8], "big"), chunks cut by
  chunk_size, the last shorter one only with save_unfull_chunk. These ints are what an LMCache
  worker reports (KVOpEvent.key) and a scheduler sends (LookupRequestMsg.hashes).
* "vllm": vLLM's hash_block_tokens chain with block size = chunk size,
  h_i = sha256_cbor((h_{i-1}, tuple(chunk_i), None)) from the NONE_HASH bytes, each folded as
  maybe_convert_block_hash folds it for KV events: int.from_bytes(h, "big") & (2**64 - 1).

The formulas are written here from LMCache's and vLLM's source (neither package is installable on
these machines); the integers for list(range(600)), chunk 256, PYTHONHASHSEED=0 were checked
against an independent re-implementation of the same lines.
"""
import hashlib
import json
import random
import sys

import cbor2


def sha256_cbor(obj):
    return hashlib.sha256(cbor2.dumps(obj, canonical=True)).digest()


def chunks(tokens, chunk_size, save_unfull):
    end = len(tokens) if save_unfull else len(tokens) - len(tokens) % chunk_size
    return [(i, min(i + chunk_size, end)) for i in range(0, end, chunk_size)]


def lmcache_keys(tokens, chunk_size, save_unfull, seed):
    prefix = int.from_bytes(sha256_cbor(seed)[:8], "big")
    keys = []
    for start, end in chunks(tokens, chunk_size, save_unfull):
        prefix = int.from_bytes(sha256_cbor((prefix, tuple(tokens[start:end]), ()))[:8], "big")
        keys.append(prefix)
    return keys


def vllm_keys(tokens, chunk_size, save_unfull, seed):
    parent = sha256_cbor(seed)
    keys = []
    for start, end in chunks(tokens, chunk_size, save_unfull):
        parent = sha256_cbor((parent, tuple(tokens[start:end]), None))
        keys.append(int.from_bytes(parent, "big") & ((1 << 64) - 1))
    return keys


def main():
    rng = random.Random(20261126)
    prompts = {
        "range600": list(range(600)),
        "random1000": [rng.randrange(151936) for _ in range(1000)],
        "exactly256": [rng.randrange(151936) for _ in range(256)],
        "one_token": [128000],
        "large_ids": [rng.randrange(1 << 31) for _ in range(70)],
    }
    cases = []
    for name, tokens in prompts.items():
        for seed in ("0", "123"):
            for chunk_size, save_unfull in ((256, True), (256, False), (16, True)):
                cases.append({
                    "name": f"{name}/seed={seed}/chunk={chunk_size}/unfull={save_unfull}",
                    "prompt": name, "seed": seed, "chunk_size": chunk_size, "save_unfull_chunk": save_unfull,
                    "ends": [e for _, e in chunks(tokens, chunk_size, save_unfull)],
                    "lmcache": lmcache_keys(tokens, chunk_size, save_unfull, seed),
                    "vllm": vllm_keys(tokens, chunk_size, save_unfull, seed),
                })
    json.dump({"prompts": prompts, "cases": cases}, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

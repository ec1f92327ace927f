#!/usr/bin/env python3
"""Writes storage-keys.json: chunk key strings as LMCache writes them, for lmcache4j's StorageKeysGoldenTest.

    ../../../../../../.cache/python/bin/python generate-storage-keys.py > storage-keys.json

The formulas are LMCache's, written here from its source (neither LMCache nor vLLM installs on these
machines), and the CBOR is the real cbor2 (pinned in tests/python/requirements.txt):

* vLLM's hash (vllm/utils/hashing.py sha256_cbor): SHA-256 of cbor2.dumps(obj, canonical=True);
  NONE_HASH = sha256_cbor(PYTHONHASHSEED) (vllm/v1/core/kv_cache_utils.py init_none_hash).
* LMCache's current token database (lmcache/v1/token_database.py with _normalize_hash_to_int, after
  LMCache PR #2999): NONE_HASH folded to int.from_bytes(h[:8], "big"); each chunk's hash is
  _hash_tokens(chunk, prefix): the inputs canonicalised to (prefix or NONE_HASH, tuple(tokens),
  tuple(extra_keys) or ()), hashed, folded the same way; chunks of chunk_size, the last shorter one
  only with save_unfull_chunk; a segment (SegmentTokenDatabase) is _hash_tokens(segment) with no
  prefix, hence NONE_HASH in its place.
* LMCache's key string (lmcache/utils.py CacheEngineKey.to_string at commit
  0353be824aebefb9fd4fbdca022746adbf252d3b): model@world_size@worker_id@<chunk_hash_hex>@dtype,
  chunk_hash_hex f"{chunk_hash:x}" for an int (lowercase, no padding), then @name%value per tag
  (request configs named lmcache.tag.<name>, in order).
* The older digest form, for the same inputs: vLLM's chain h_i = sha256_cbor((h_{i-1},
  tuple(chunk), None)) from the NONE_HASH bytes, written as bytes.hex() (64 digits), as LMCache up to
  commit 00e744e01f313349c33d3436872e29068a46910d and lmcache4j before storage_chunk_keys wrote it.
"""
import hashlib
import json
import random
import sys

import cbor2


def sha256_cbor(obj):
    return hashlib.sha256(cbor2.dumps(obj, canonical=True)).digest()


def fold(digest):
    return int.from_bytes(digest[:8], "big")


def chunks(tokens, chunk_size, save_unfull):
    end = len(tokens) if save_unfull else len(tokens) - len(tokens) % chunk_size
    return [(i, min(i + chunk_size, end)) for i in range(0, end, chunk_size)]


def int_chain(tokens, chunk_size, save_unfull, seed):
    none_hash = fold(sha256_cbor(seed))
    prefix, out = none_hash, []
    for start, end in chunks(tokens, chunk_size, save_unfull):
        prefix = fold(sha256_cbor((prefix, tuple(tokens[start:end]), ())))
        out.append(prefix)
    return out


def digest_chain(tokens, chunk_size, save_unfull, seed):
    prefix, out = sha256_cbor(seed), []
    for start, end in chunks(tokens, chunk_size, save_unfull):
        prefix = sha256_cbor((prefix, tuple(tokens[start:end]), None))
        out.append(prefix)
    return out


def key_string(model, world_size, worker_id, chunk_hash, dtype, tags):
    hex_ = f"{chunk_hash:x}" if isinstance(chunk_hash, int) else chunk_hash.hex()
    s = f"{model}@{world_size}@{worker_id}@{hex_}@{dtype}"
    if tags:
        s += "@" + "@".join(f"{k}%{v}" for k, v in tags)
    return s


def main():
    rng = random.Random(20261127)
    prompts = {
        "range600": list(range(600)),
        "random1000": [rng.randrange(151936) for _ in range(1000)],
        "exactly256": [rng.randrange(151936) for _ in range(256)],
        "one_token": [128000],
        "large_ids": [rng.randrange(1 << 31) for _ in range(70)],
        "small_ids": [rng.randrange(24) for _ in range(40)],
    }
    identities = [
        {"model": "meta-llama/Llama-3.1-8B", "world_size": 1, "worker_id": 0, "dtype": "bfloat16", "tags": []},
        {"model": "Qwen/Qwen3-32B", "world_size": 4, "worker_id": 3, "dtype": "half", "tags": []},
        {"model": "deepseek-ai/DeepSeek-V3", "world_size": 8, "worker_id": 5, "dtype": "fp8_e4m3fn",
         "tags": [["user", "alice"], ["lora", "sql-adapter"]]},
        {"model": "mistralai/Mistral-7B-v0.3", "world_size": 2, "worker_id": 1, "dtype": "float", "tags": [["tenant", "t-42"]]},
    ]
    cases = []
    n = 0
    for name, tokens in prompts.items():
        for seed in ("0", "123", ""):
            for chunk_size, save_unfull in ((256, True), (256, False), (16, True), (7, False)):
                ident = identities[n % len(identities)]
                n += 1
                ints = int_chain(tokens, chunk_size, save_unfull, seed)
                digests = digest_chain(tokens, chunk_size, save_unfull, seed)
                cases.append({
                    "name": f"{name}/seed={seed!r}/chunk={chunk_size}/unfull={save_unfull}/{ident['model']}",
                    "prompt": name, "seed": seed, "chunk_size": chunk_size, "save_unfull_chunk": save_unfull,
                    **ident,
                    "ends": [e for _, e in chunks(tokens, chunk_size, save_unfull)],
                    "keys": [key_string(ident["model"], ident["world_size"], ident["worker_id"], h, ident["dtype"],
                                        ident["tags"]) for h in ints],
                    "digest_keys": [key_string(ident["model"], ident["world_size"], ident["worker_id"], h,
                                               ident["dtype"], ident["tags"]) for h in digests],
                })
    # Segments (blending): each hashed alone, NONE_HASH in the parent's place.
    segments = []
    for seed in ("0", "7"):
        for name in ("random1000", "small_ids", "one_token"):
            tokens = prompts[name]
            h = fold(sha256_cbor((fold(sha256_cbor(seed)), tuple(tokens), ())))
            segments.append({"prompt": name, "seed": seed, "hash_hex": f"{h:x}"})
    json.dump({"prompts": prompts, "cases": cases, "segments": segments}, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An LMCache-format reader and writer of shared stores, for lmcache4j's LmcacheStoresInteropTest.

Reads a job (JSON) on stdin, keys two prompts with LMCache's current token database, reads the
chunks of one prompt from the store (as LMCache's connector reads them) and writes the chunks of the
other (as LMCache's connector writes them), and prints what it read and wrote (JSON) on stdout.

Nothing here is LMCache's code: the formulas and layouts are written from LMCache's source, and
named by commit:

* Keys: lmcache/v1/token_database.py after LMCache PR #2999 (_normalize_hash_to_int): NONE_HASH =
  first 8 bytes, big-endian, of sha256_cbor(PYTHONHASHSEED); key_i = the same fold of
  sha256_cbor((key_{i-1}, tuple(chunk_i), ())); the key string is lmcache/utils.py
  CacheEngineKey.to_string at commit 0353be824aebefb9fd4fbdca022746adbf252d3b:
  model@world_size@worker_id@{chunk_hash:x}@dtype.
* S3: lmcache/v1/storage_backend/connector/s3_connector.py at commit
  919072243347aebd99727bc6f13dbcb55a7d7a40: one object per chunk at "/" + quote(key_str.replace("/", "_")),
  its body the chunk's bytes alone; only full chunks are written, and a read takes an object only
  when its size (HEAD Content-Length) is the full chunk's. boto3 stands in for awscrt, which does not
  install here: the object key and the bytes are the same.
* Redis: lmcache/v1/storage_backend/connector/redis_connector.py at commit
  3ff496a27fc2feee34ad5117e11f30eb3ea69098: <key>kv_bytes holds the payload, <key>metadata the 28-byte
  RemoteMetadata header (struct "iiiiiii", little-endian; read with unpack_from, so bytes after it
  are ignored), payload written first.
* FS: lmcache/v1/storage_backend/connector/fs_connector.py: <dir>/<key_str.replace("/", "-SEP-")>.data
  holding the 28-byte header, then the payload, written to a .tmp file and renamed.
"""
import hashlib
import json
import os
import socket
import struct
import sys

import cbor2


def sha256_cbor(obj):
    return hashlib.sha256(cbor2.dumps(obj, canonical=True)).digest()


def lmcache_keys(job, tokens):
    """LMCache's key strings of tokens' full chunks (LMCache's S3 connector stores no partial chunk)."""
    chunk = job["chunk_size"]
    prefix = int.from_bytes(sha256_cbor(job["seed"])[:8], "big")
    keys = []
    for start in range(0, len(tokens) - len(tokens) % chunk, chunk):
        prefix = int.from_bytes(sha256_cbor((prefix, tuple(tokens[start:start + chunk]), ()))[:8], "big")
        keys.append(f"{job['model']}@{job['world_size']}@{job['worker_id']}@{prefix:x}@{job['dtype']}")
    return keys


def pattern(index, size):
    """The bytes this script writes for chunk `index`: byte i is (i * 31 + index + 7) mod 256."""
    return bytes((i * 31 + index + 7) & 0xFF for i in range(size))


class S3Store:
    def __init__(self, job):
        import boto3
        from botocore.config import Config
        self.bucket = job["bucket"]
        self.client = boto3.client("s3", endpoint_url=job["endpoint"], aws_access_key_id=job["access_key"],
                                   aws_secret_access_key=job["secret_key"], region_name="us-east-1",
                                   # No flexible checksums, as LMCache's awscrt requests send none (and s3proxy
                                   # refuses x-amz-checksum-mode).
                                   config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                                 request_checksum_calculation="when_required",
                                                 response_checksum_validation="when_required"))

    @staticmethod
    def object_key(key):
        return key.replace("/", "_")

    def read(self, key, chunk_bytes):
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self.object_key(key))
        except self.client.exceptions.ClientError:
            return None
        if head["ContentLength"] != chunk_bytes:  # LMCache: "Size mismatch ... Skipping this key"
            return None
        return self.client.get_object(Bucket=self.bucket, Key=self.object_key(key))["Body"].read()

    def write(self, key, header, payload):
        self.client.put_object(Bucket=self.bucket, Key=self.object_key(key), Body=payload,
                               ContentType="application/octet-stream")


class RedisStore:
    """Just enough RESP for GET and SET."""

    def __init__(self, job):
        self.sock = socket.create_connection(("127.0.0.1", job["redis_port"]), timeout=30)
        self.buf = b""

    def _command(self, *parts):
        out = b"*%d\r\n" % len(parts)
        for p in parts:
            p = p if isinstance(p, bytes) else p.encode()
            out += b"$%d\r\n%s\r\n" % (len(p), p)
        self.sock.sendall(out)
        return self._reply()

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(1 << 20)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 20)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if line[:1] == b"-":
            raise RuntimeError(line.decode())
        return line

    def read(self, key, chunk_bytes):
        meta = self._command("GET", key + "metadata")
        if meta is None or len(meta) < 28:
            return None
        length = struct.unpack_from("iiiiiii", meta)[0]
        payload = self._command("GET", key + "kv_bytes")
        return payload if payload is not None and len(payload) == length else None

    def write(self, key, header, payload):
        self._command("SET", key + "kv_bytes", payload)
        self._command("SET", key + "metadata", header)


class FsStore:
    def __init__(self, job):
        self.dir = job["fs_dir"]

    def path(self, key):
        return os.path.join(self.dir, key.replace("/", "-SEP-") + ".data")

    def read(self, key, chunk_bytes):
        try:
            with open(self.path(key), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        length = struct.unpack_from("iiiiiii", data)[0]
        payload = data[28:]
        return payload if len(payload) == length else None

    def write(self, key, header, payload):
        tmp = self.path(key)[:-len(".data")] + ".tmp"
        with open(tmp, "wb") as f:
            f.write(header + payload)
        os.replace(tmp, self.path(key))


def main():
    job = json.load(sys.stdin)
    store = {"s3": S3Store, "redis": RedisStore, "fs": FsStore}[job["store"]](job)
    size = job["chunk_bytes"]
    header = bytes.fromhex(job["header_hex"])
    read = []
    for key in lmcache_keys(job, job["read_tokens"]):
        payload = store.read(key, size)
        read.append({"key": key, "sha256": None if payload is None else hashlib.sha256(payload).hexdigest()})
    wrote = []
    for index, key in enumerate(lmcache_keys(job, job["write_tokens"])):
        store.write(key, header, pattern(index, size))
        wrote.append(key)
    json.dump({"read": read, "wrote": wrote}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A bounded fuzz loop against a cache controller's sockets (and its HTTP API), from outside.

    .cache/python/bin/python tests/python/controller_fuzz.py --pull tcp://127.0.0.1:P --reply tcp://127.0.0.1:R \
        [--http 127.0.0.1:H] --golden controller-messages.json [--frames 3000] [--seed 1] [--seconds 60]

Sends malformed, truncated and unknown frames built from the golden vectors (LMCache's exact
encodings) to the PULL socket (multipart, mixed with valid frames), the ROUTER (DEALER requests,
some with broken envelopes) and the heartbeat ROUTER, and malformed requests to the HTTP API. Then
it checks that the controller still serves: a fresh worker registers, its heartbeat is answered,
and (with --http) a lookup answers. Prints one JSON line {"event": "fuzz_done", ...} and exits 0
when the controller kept serving, 1 when it did not. Nothing here waits without a bound.
"""

import argparse
import http.client
import json
import random
import sys
import time

sys.dont_write_bytecode = True
import zmq  # noqa: E402

import lmcache_wire as wire  # noqa: E402
from lmcache_worker_sim import emit, tcp  # noqa: E402


def hostile_frames(rng, golden):
    """One malformed frame and its kind: every kind a strict, bounded decoder must refuse."""
    valid = bytes.fromhex(rng.choice(golden)["hex"])
    kind = rng.choice([
        "truncated", "bit_flip", "random_bytes", "unknown_type", "wrong_field_type", "missing_field",
        "huge_array", "huge_map", "huge_str", "deep_nesting", "trailing_bytes", "empty", "not_a_map",
        "type_not_first", "int_out_of_range", "json_garbage", "nil_type", "huge_key_list",
    ])
    if kind == "truncated":
        return kind, valid[:rng.randrange(0, len(valid))]
    if kind == "bit_flip":
        b = bytearray(valid)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return kind, bytes(b)
    if kind == "random_bytes":
        return kind, rng.randbytes(rng.randint(1, 200))
    if kind == "unknown_type":
        return kind, wire.pack({"type": "NoSuchMsg", "instance_id": "x", "worker_id": 0})
    if kind == "wrong_field_type":
        return kind, wire.pack({"type": "KVAdmitMsg", "instance_id": 7, "worker_id": "zero", "key": "k",
                                "location": None, "seq_num": 1.5})
    if kind == "missing_field":
        return kind, wire.pack({"type": "BatchedKVOperationMsg", "instance_id": "fuzz", "worker_id": 0})
    if kind == "huge_array":  # a FullSyncBatchMsg whose keys claim 2**32-1 elements in one byte
        head = wire.pack({"type": "FullSyncBatchMsg", "instance_id": "fuzz", "worker_id": 0,
                          "location": "LocalCPUBackend", "sync_id": "s", "batch_id": 0})
        return kind, b"\x87" + head[1:] + b"\xa4keys\xdd\xff\xff\xff\xff\x01"
    if kind == "huge_map":
        return kind, b"\xdf\xff\xff\xff\xff\xa4type"
    if kind == "huge_str":
        return kind, b"\x81\xa4type\xdb\xff\xff\xff\xffKVAdmitMsg"
    if kind == "deep_nesting":
        return kind, b"\x82\xa4type\xaaKVAdmitMsg\xa3key" + b"\x91" * 100000 + b"\x00"
    if kind == "trailing_bytes":
        return kind, valid + b"\xc0"
    if kind == "empty":
        return kind, b""
    if kind == "not_a_map":
        return kind, wire.pack(["KVAdmitMsg", "x", 0, 1, "LocalCPUBackend", 0])
    if kind == "type_not_first":
        return kind, wire.pack({"instance_id": "fuzz", "type": "DeRegisterMsg", "worker_id": 0, "ip": "a", "port": 1})
    if kind == "int_out_of_range":  # a key that is not a 64-bit integer: a float, and a bin
        return kind, wire.pack({"type": "KVAdmitMsg", "instance_id": "fuzz", "worker_id": 0, "key": 1e30,
                                "location": "LocalCPUBackend", "seq_num": b"\x00"})
    if kind == "json_garbage":
        return kind, b'{"type": "KVAdmitMsg", "key": ' + rng.randbytes(20)
    if kind == "nil_type":
        return kind, wire.pack({"type": None})
    # huge_key_list: a valid-looking sync batch of 70,000 keys from an instance that never started a sync
    return kind, wire.encode_message("FullSyncBatchMsg", instance_id="fuzz-ghost", worker_id=0,
                                     location="LocalCPUBackend", sync_id="ghost", batch_id=0,
                                     keys=list(range(70000)))


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        with open(args.golden, encoding="utf-8") as f:
            self.golden = json.load(f)
        self.ctx = zmq.Context.instance()
        self.sent = {}
        self.replies = {}

    def count(self, table, key):
        table[key] = table.get(key, 0) + 1

    def dealer(self, url):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SNDHWM, 10000)
        s.connect(tcp(url))
        return s

    def drain(self, sock):
        while sock.poll(0, zmq.POLLIN):
            frames = sock.recv_multipart()
            try:
                self.count(self.replies, wire.decode_message(frames[-1])["type"])
            except Exception:  # noqa: BLE001 - a reply we cannot read is itself a finding
                self.count(self.replies, "undecodable_reply")

    def heartbeat_url(self):
        """Registers a probe worker to learn the heartbeat ROUTER's address."""
        d = self.dealer(self.args.reply)
        try:
            d.send_multipart([b"", wire.encode_message("RegisterMsg", instance_id="fuzz-probe", worker_id=0,
                                                       ip="127.0.0.1", port=1, peer_init_url=None)])
            if not d.poll(5000, zmq.POLLIN):
                return None
            ret = wire.decode_message(d.recv_multipart()[-1])
            return ret.get("extra_config", {}).get("heartbeat_url") if ret["type"] == "RegisterRetMsg" else None
        finally:
            d.close(0)

    def fuzz_sockets(self, deadline):
        push = self.ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 1000)
        push.setsockopt(zmq.SNDHWM, 10000)
        push.connect(tcp(self.args.pull))
        reply = self.dealer(self.args.reply)
        hb_url = self.heartbeat_url()
        beat = self.dealer(hb_url) if hb_url else None
        try:
            for i in range(self.args.frames):
                if time.monotonic() > deadline:
                    break
                kind, frame = hostile_frames(self.rng, self.golden)
                target = self.rng.choice(["pull", "pull", "reply", "heartbeat"] if beat else ["pull", "pull", "reply"])
                self.count(self.sent, f"{target}:{kind}")
                if target == "pull":
                    valid = bytes.fromhex(self.rng.choice(self.golden)["hex"])
                    batch = [frame, valid] if self.rng.random() < 0.5 else [frame]
                    push.send_multipart(batch, zmq.NOBLOCK)
                else:
                    sock = reply if target == "reply" else beat
                    envelope = self.rng.random()
                    if envelope < 0.8:
                        sock.send_multipart([b"", frame], zmq.NOBLOCK)
                    elif envelope < 0.9:
                        sock.send_multipart([frame], zmq.NOBLOCK)  # no empty delimiter
                    else:
                        sock.send_multipart([b"", frame, b"extra"], zmq.NOBLOCK)
                    self.drain(sock)
            time.sleep(0.5)
            self.drain(reply)
            if beat:
                self.drain(beat)
        except zmq.Again:
            self.count(self.sent, "backpressure_stop")
        finally:
            push.close(1000)
            reply.close(0)
            if beat:
                beat.close(0)

    def fuzz_http(self, deadline):
        host, _, port = self.args.http.rpartition(":")
        bodies = [b"", b"{", b"[]", b"null", b'{"tokens": "abc"}', b'{"tokens": [1, -5, "x"]}',
                  b'{"tokens": [1e400]}', b'{"tokens": [' + b"9" * 400 + b"]}", b"[" * 5000 + b"]" * 5000,
                  b'{"tokens": [1, 2, 3]}' + b"junk", b'\xff\xfe\x00binary', b'{"tokens": [1,2,3]}']
        paths = ["/lookup", "/lookup?x=1", "/instances", "/metrics", "/clear", "/pin", "/move", "/health",
                 "/nope", "/" + "a" * 3000, "/lookup/../metrics"]
        for _ in range(self.args.http_requests):
            if time.monotonic() > deadline:
                break
            method = self.rng.choice(["GET", "POST", "PUT", "DELETE"])
            path = self.rng.choice(paths)
            body = self.rng.choice(bodies) if method in ("POST", "PUT") else None
            try:
                c = http.client.HTTPConnection(host, int(port), timeout=5)
                c.request(method, path, body=body, headers={"Content-Type": "application/json"})
                status = c.getresponse().status
                c.close()
                self.count(self.replies, f"http_{status // 100}xx")
            except (OSError, http.client.HTTPException) as e:
                self.count(self.replies, f"http_error_{type(e).__name__}")

    def still_serving(self):
        """A new worker registers and heartbeats; with --http, a lookup answers 200."""
        checks = {}
        d = self.dealer(self.args.reply)
        try:
            d.send_multipart([b"", wire.encode_message("RegisterMsg", instance_id="fuzz-after", worker_id=0,
                                                       ip="127.0.0.1", port=2, peer_init_url=None)])
            ok = d.poll(10000, zmq.POLLIN)
            reply = wire.decode_message(d.recv_multipart()[-1]) if ok else None
            checks["register"] = reply is not None and reply["type"] == "RegisterRetMsg"
            url = reply.get("extra_config", {}).get("heartbeat_url") if checks["register"] else None
        finally:
            d.close(0)
        if url:
            h = self.dealer(url)
            try:
                h.send_multipart([b"", wire.encode_message("HeartbeatMsg", instance_id="fuzz-after", worker_id=0,
                                                           ip="127.0.0.1", port=2, peer_init_url=None)])
                ok = h.poll(10000, zmq.POLLIN)
                checks["heartbeat"] = ok and wire.decode_message(h.recv_multipart()[-1])["type"] == "HeartbeatRetMsg"
            finally:
                h.close(0)
        if self.args.http:
            host, _, port = self.args.http.rpartition(":")
            try:
                c = http.client.HTTPConnection(host, int(port), timeout=10)
                c.request("POST", "/lookup", body=json.dumps({"tokens": list(range(512))}),
                          headers={"Content-Type": "application/json"})
                checks["http_lookup"] = c.getresponse().status == 200
                c.close()
            except (OSError, http.client.HTTPException):
                checks["http_lookup"] = False
        return checks

    def run(self):
        deadline = time.monotonic() + self.args.seconds
        self.fuzz_sockets(deadline)
        if self.args.http:
            self.fuzz_http(deadline)
        checks = self.still_serving()
        alive = bool(checks) and all(checks.values())
        emit("fuzz_done", sent=sum(v for k, v in self.sent.items() if k != "backpressure_stop"),
             by_kind=self.sent, replies=self.replies, checks=checks, alive=alive)
        return 0 if alive else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pull", required=True)
    p.add_argument("--reply", required=True)
    p.add_argument("--http", help="HOST:PORT of the controller's HTTP API")
    p.add_argument("--golden", required=True, help="controller-messages.json")
    p.add_argument("--frames", type=int, default=3000)
    p.add_argument("--http-requests", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=60.0, help="an upper bound on the fuzzing itself")
    return Fuzzer(p.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""An LMCache-format cache-controller worker, for lmcache4j's cross-process tests.

Run it in the tests' Python environment (.cache/python, created by ./lmcache4j test: the real
msgspec and pyzmq). It does on the wire what an LMCache worker does, with the messages built by
lmcache_wire as msgspec Structs (the table the golden generator checks against LMCache's
message.py):

  1. binds its REP socket (the controller's control messages arrive there);
  2. DEALER to --reply: RegisterMsg -> RegisterRetMsg, whose extra_config["heartbeat_url"] it keeps;
  3. PUSH to --pull: the chunks it holds as BatchedKVOperationMsg admit/evict events, in multipart
     batches (several messages per send, --batch-size events per message);
  4. every --heartbeat-interval seconds, DEALER to the heartbeat URL: HeartbeatMsg -> HeartbeatRetMsg;
     a FullSyncCommand in the reply starts a full sync (FullSyncStartMsg on the reply DEALER,
     FullSyncBatchMsg... FullSyncEndMsg pushed, FullSyncStatusMsg polled until can_exit_freeze,
     missing batches sent again);
  5. answers ClearWorkerMsg, PinWorkerMsg, MoveWorkerMsg (disk -> CPU), HealthWorkerMsg,
     CheckFinishWorkerMsg on the REP socket; ErrorMsg for the rest;
  6. on {"op": "quit"}, end of stdin, SIGTERM or --run-seconds: DeRegisterMsg, then exit 0.

Chunk keys are not computed here: the Java test hashes the prompt with lmcache4j's own hasher and
passes the chunks (start, end, key) in, so what the controller's lookup is checked against is
exactly lmcache4j's key (hash agreement with vLLM/LMCache is ChunkHasherGoldenTest's job).

Input (stdin, JSON lines; or --prompt-file with one "admit" object at start):
  {"op": "admit", "location": "LocalCPUBackend", "tokens": [...], "chunks": [[start, end, key], ...]}
  {"op": "admit", "location": "LocalCPUBackend", "tokens": [...]}   keys computed here as LMCache
                               computes them (lmcache_chunks: --chunk-size, --hash-seed)
  {"op": "evict", "location": "LocalCPUBackend", "keys": [key, ...]}
  {"op": "heartbeat"}          one heartbeat now
  {"op": "quit"}
Output (stdout, one JSON object per line, flushed): {"event": ..., ...}; see emit() calls.
Keys may be given signed (Java long) or unsigned; they are sent as the unsigned 64-bit value, as
lmcache4j's engines send them (--signed-keys sends them as given, as LMCache's builtin hash does).
"""

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
import uuid

sys.dont_write_bytecode = True
import zmq  # noqa: E402

import lmcache_wire as wire  # noqa: E402

CPU = "LocalCPUBackend"
DISK = "LocalDiskBackend"


def lmcache_chunks(tokens, chunk_size, seed):
    """[start, end, key] of each full chunk, keyed as LMCache's token database keys them (LMCache PR
    #2999's lmcache/v1/token_database.py with vLLM's sha256_cbor): NONE_HASH = sha256_cbor(seed) folded
    to its first 8 bytes, then key_i = first 8 bytes of sha256_cbor((key_{i-1}, tuple(chunk), ())).
    The golden generator engine/src/test/resources/golden/controller-keys/ writes the same formula."""
    import hashlib

    import cbor2

    def sha256_cbor(obj):
        return hashlib.sha256(cbor2.dumps(obj, canonical=True)).digest()

    key = int.from_bytes(sha256_cbor(seed)[:8], "big")
    out = []
    for start in range(0, len(tokens) - len(tokens) % chunk_size, chunk_size):
        key = int.from_bytes(sha256_cbor((key, tuple(tokens[start:start + chunk_size]), ()))[:8], "big")
        out.append([start, start + chunk_size, key])
    return out


def emit(event, **fields):
    fields = {"event": event, **fields}
    sys.stdout.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def tcp(url):
    """'host:port', '*:port' or 'tcp://host:port' -> a connectable tcp:// address."""
    url = url if url.startswith("tcp://") else "tcp://" + url
    host, _, port = url[len("tcp://"):].rpartition(":")
    if host in ("*", "0.0.0.0", ""):
        host = "127.0.0.1"
    return f"tcp://{host}:{port}"


class Held:
    """The chunks this worker holds: location -> {key: (start, end)}, plus the prompt tokens per
    location, in admit order (so a pin or a move can tell how long a prefix it holds)."""

    def __init__(self):
        self.chunks = {}
        self.tokens = {}

    def admit(self, location, tokens, chunks):
        held = self.chunks.setdefault(location, {})
        fresh = [c for c in chunks if c[2] not in held]
        for start, end, key in chunks:
            held[key] = (start, end)
        if tokens:
            self.tokens[location] = list(tokens)
        return fresh

    def evict(self, location, keys):
        held = self.chunks.get(location, {})
        return [k for k in keys if held.pop(k, None) is not None]

    def clear(self, location):
        held = self.chunks.pop(location, {})
        self.tokens.pop(location, None)
        return list(held), sum(end - start for start, end in held.values())

    def prefix_tokens(self, location, tokens):
        """How many leading tokens of ``tokens`` this location holds as whole chunks from 0."""
        mine = self.tokens.get(location, [])
        common = 0
        while common < min(len(mine), len(tokens)) and mine[common] == tokens[common]:
            common += 1
        covered = 0
        for start, end in sorted(self.chunks.get(location, {}).values()):
            if start != covered or end > common:
                break
            covered = end
        return covered

    def chunks_up_to(self, location, end_token):
        return [(s, e, k) for k, (s, e) in sorted(self.chunks.get(location, {}).items(), key=lambda kv: kv[1])
                if e <= end_token]

    def keys(self, location):
        return list(self.chunks.get(location, {}))


class Worker:
    def __init__(self, args):
        self.args = args
        self.ctx = zmq.Context.instance()
        self.held = Held()
        self.seq = 0
        self.inbox = queue.Queue()
        self.heartbeat_url = None
        self.reply_dealer = None
        self.heartbeat_dealer = None
        self.controller_up = None
        self.heartbeats = 0
        self.stop = False

        self.rep = self.ctx.socket(zmq.REP)
        self.rep.setsockopt(zmq.LINGER, 0)
        if args.rep_port:
            self.rep.bind(f"tcp://127.0.0.1:{args.rep_port}")
            self.rep_port = args.rep_port
        else:
            self.rep_port = self.rep.bind_to_random_port("tcp://127.0.0.1")
        self.push = self.ctx.socket(zmq.PUSH)
        self.push.setsockopt(zmq.LINGER, 2000)
        self.push.setsockopt(zmq.SNDHWM, 100000)
        self.push.connect(tcp(args.pull))

    # -- request/reply over DEALER (LMCache's worker puts [b"", payload] on a DEALER) ---------

    def _dealer(self, url):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(tcp(url))
        return s

    def request(self, which, payload):
        """Sends one request and waits --reply-timeout for its reply; None on timeout (the socket is
        then replaced so that a late reply cannot answer the next request)."""
        sock = self.reply_dealer if which == "reply" else self.heartbeat_dealer
        sock.send_multipart([b"", payload])
        if sock.poll(int(self.args.reply_timeout * 1000), zmq.POLLIN):
            frames = sock.recv_multipart()
            return wire.decode_message(frames[-1])
        sock.close(0)
        fresh = self._dealer(self.args.reply if which == "reply" else self.heartbeat_url)
        if which == "reply":
            self.reply_dealer = fresh
        else:
            self.heartbeat_dealer = fresh
        return None

    def identity(self):
        return dict(instance_id=self.args.instance, worker_id=self.args.worker_id, ip="127.0.0.1", port=self.rep_port)

    def register(self):
        self.reply_dealer = self._dealer(self.args.reply)
        deadline = time.monotonic() + self.args.register_timeout
        while time.monotonic() < deadline:
            ret = self.request("reply", wire.encode_message("RegisterMsg", **self.identity(),
                                                            peer_init_url=self.args.peer_init_url))
            if ret is None:
                continue
            if ret["type"] != "RegisterRetMsg":
                emit("register_refused", reply=ret)
                return False
            url = ret["extra_config"].get("heartbeat_url")
            self.heartbeat_url = url
            emit("registered", instance=self.args.instance, worker_id=self.args.worker_id, rep_port=self.rep_port,
                 heartbeat_url=url)
            if url:
                self.heartbeat_dealer = self._dealer(url)
            return True
        emit("register_timeout", reply=self.args.reply)
        return False

    def deregister(self):
        self.push.send(wire.encode_message("DeRegisterMsg", **self.identity()))
        emit("deregistered")

    # -- pushes --------------------------------------------------------------------------------

    def wire_key(self, key):
        key = int(key)
        if not self.args.signed_keys and key < 0:
            key += 1 << 64
        return key

    def push_ops(self, location, op, keys):
        """BatchedKVOperationMsg frames of --batch-size events, sent as one multipart message."""
        if not keys:
            return
        frames = []
        for i in range(0, len(keys), self.args.batch_size):
            events = []
            for key in keys[i:i + self.args.batch_size]:
                events.append(wire.kv_op(op, self.wire_key(key), self.seq))
                self.seq += 1
            frames.append(wire.encode_message("BatchedKVOperationMsg", instance_id=self.args.instance,
                                              worker_id=self.args.worker_id, location=location, operations=events))
        self.push.send_multipart(frames)
        emit("pushed", op=op, location=location, events=len(keys), frames=len(frames))

    def admit(self, location, tokens, chunks):
        chunks = [(int(s), int(e), int(k)) for s, e, k in chunks]
        fresh = self.held.admit(location, tokens, chunks)
        self.push_ops(location, wire.OP_ADMIT, [k for _, _, k in fresh])

    def evict(self, location, keys):
        gone = self.held.evict(location, [int(k) for k in keys])
        self.push_ops(location, wire.OP_EVICT, gone)

    # -- heartbeats and full sync --------------------------------------------------------------

    def heartbeat(self):
        if self.heartbeat_dealer is None:
            return
        ret = self.request("heartbeat", wire.encode_message("HeartbeatMsg", **self.identity(),
                                                            peer_init_url=self.args.peer_init_url))
        up = ret is not None and ret["type"] == "HeartbeatRetMsg"
        self.heartbeats += 1
        if up != self.controller_up:
            emit("controller_up" if up else "controller_down", heartbeats=self.heartbeats)
            self.controller_up = up
        if not up:
            return
        for cmd in ret["commands"]:
            if cmd.get(wire.COMMAND_TAG_FIELD) == "full_sync":
                emit("full_sync_command", reason=cmd.get("reason"))
                for location in sorted(self.held.chunks) or [CPU]:
                    self.full_sync(location, cmd.get("reason"))
            else:
                emit("unknown_command", command=cmd)

    def full_sync(self, location, reason):
        keys = [self.wire_key(k) for k in self.held.keys(location)]
        size = self.args.sync_batch_size
        batches = [keys[i:i + size] for i in range(0, len(keys), size)] or [[]]
        sync_id = f"{self.args.instance}_{self.args.worker_id}_{uuid.uuid4().hex[:8]}"
        base = dict(instance_id=self.args.instance, worker_id=self.args.worker_id)
        ret = None
        for _ in range(3):
            ret = self.request("reply", wire.encode_message("FullSyncStartMsg", **base, location=location,
                                                            sync_id=sync_id, total_keys=len(keys),
                                                            batch_count=len(batches)))
            if ret is not None and ret["type"] == "FullSyncStartRetMsg" and ret["accepted"]:
                break
            ret = None
        if ret is None:
            emit("full_sync_failed", location=location, reason=reason, step="start")
            return

        def send(batch_ids):
            for b in batch_ids:
                self.push.send(wire.encode_message("FullSyncBatchMsg", **base, location=location, sync_id=sync_id,
                                                   batch_id=b, keys=batches[b]))
            self.push.send(wire.encode_message("FullSyncEndMsg", **base, location=location, sync_id=sync_id,
                                               actual_total_keys=len(keys)))

        send(range(len(batches)))
        resent = 0
        deadline = time.monotonic() + self.args.sync_timeout
        while time.monotonic() < deadline:
            time.sleep(self.args.sync_poll_interval)
            status = self.request("reply", wire.encode_message("FullSyncStatusMsg", **base, sync_id=sync_id))
            if status is None or status["type"] != "FullSyncStatusRetMsg":
                continue
            if status["can_exit_freeze"]:
                emit("full_sync_done", location=location, reason=reason, keys=len(keys), batches=len(batches),
                     resent=resent, sync_id=sync_id)
                return
            missing = [b for b in status["missing_batches"] if 0 <= b < len(batches)]
            if missing and resent < 3:
                resent += 1
                send(missing)
        emit("full_sync_failed", location=location, reason=reason, step="status", sync_id=sync_id)

    # -- control messages on the REP socket ----------------------------------------------------

    def answer(self, frame):
        try:
            msg = wire.decode_message(frame)
        except Exception as e:  # noqa: BLE001 - any undecodable frame gets LMCache's ErrorMsg
            return "undecodable", wire.message("ErrorMsg", error=f"Worker error: {e}")
        kind = msg["type"]
        if kind == "ClearWorkerMsg":
            keys, tokens = self.held.clear(msg["location"])
            self.push_ops(msg["location"], wire.OP_EVICT, keys)
            return kind, wire.message("ClearWorkerRetMsg", num_tokens=tokens)
        if kind == "PinWorkerMsg":
            return kind, wire.message("PinWorkerRetMsg",
                                      num_tokens=self.held.prefix_tokens(msg["location"], msg["tokens"]))
        if kind == "MoveWorkerMsg":
            target = msg["new_position"][1]
            tokens = msg["tokens"] or self.held.tokens.get(msg["old_position"], [])
            n = self.held.prefix_tokens(msg["old_position"], tokens)
            chunks = self.held.chunks_up_to(msg["old_position"], n)
            self.admit(target, tokens, chunks)
            return kind, wire.message("MoveWorkerRetMsg", num_tokens=n)
        if kind == "HealthWorkerMsg":
            return kind, wire.message("HealthWorkerRetMsg", error_code=0)
        if kind == "CheckFinishWorkerMsg":
            return kind, wire.message("CheckFinishWorkerRetMsg", status="finished")
        if kind in ("CompressWorkerMsg", "DecompressWorkerMsg"):
            return kind, wire.message("ErrorMsg", error=f"{kind} is not supported by this simulator")
        return kind, wire.message("ErrorMsg", error=f"Unknown message: {kind}")

    def serve_control(self):
        while self.rep.poll(0, zmq.POLLIN):
            kind, reply = self.answer(self.rep.recv())
            self.rep.send(wire.pack(reply))
            emit("control", request=kind, reply=reply)

    # -- the loop ------------------------------------------------------------------------------

    def handle(self, line):
        try:
            cmd = json.loads(line)
            op = cmd["op"]
            if op == "admit":
                tokens = cmd.get("tokens", [])
                chunks = cmd["chunks"] if "chunks" in cmd else lmcache_chunks(tokens, self.args.chunk_size,
                                                                               self.args.hash_seed)
                self.admit(cmd.get("location", CPU), tokens, chunks)
            elif op == "evict":
                self.evict(cmd.get("location", CPU), cmd["keys"])
            elif op == "heartbeat":
                self.heartbeat()
            elif op == "quit":
                self.stop = True
            else:
                emit("bad_input", line=line.strip(), error=f"unknown op {op!r}")
        except (ValueError, KeyError, TypeError) as e:
            emit("bad_input", line=line.strip(), error=str(e))

    def run(self):
        emit("started", instance=self.args.instance, rep_port=self.rep_port, pid=os.getpid())
        if not self.register():
            return 3
        if self.args.prompt_file:
            with open(self.args.prompt_file, encoding="utf-8") as f:
                self.handle(f.read())
        threading.Thread(target=self._read_stdin, daemon=True).start()
        end = time.monotonic() + self.args.run_seconds if self.args.run_seconds else None
        next_beat = time.monotonic() + self.args.heartbeat_delay
        while not self.stop and (end is None or time.monotonic() < end):
            self.serve_control()
            try:
                line = self.inbox.get(timeout=0.01)
                if line is None:
                    break
                self.handle(line)
            except queue.Empty:
                pass
            if self.args.heartbeat_interval > 0 and time.monotonic() >= next_beat:
                self.heartbeat()
                next_beat = time.monotonic() + self.args.heartbeat_interval
        self.deregister()
        self.push.close(2000)
        return 0

    def _read_stdin(self):
        for line in sys.stdin:
            if line.strip():
                self.inbox.put(line)
        self.inbox.put(None)


def self_check(path):
    """Re-encodes every golden vector from its fields with msgspec (lmcache_wire's Structs): same bytes?"""
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)

    bad = []
    for v in vectors:
        decoded = wire.decode_message(bytes.fromhex(v["hex"]))
        fields = {k: x for k, x in decoded.items() if k != "type"}
        ok = decoded["type"] == v["type"] and wire.encode_message(v["type"], **fields).hex() == v["hex"]
        if not ok:
            bad.append(v["name"])
    emit("self_check", vectors=len(vectors), failed=bad)
    return 1 if bad or not vectors else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reply", help="controller_reply_url, e.g. tcp://127.0.0.1:9001 (the controller's ROUTER)")
    p.add_argument("--pull", help="controller_pull_url, e.g. tcp://127.0.0.1:9000 (the controller's PULL)")
    p.add_argument("--instance", default="sim-a", help="lmcache_instance_id")
    p.add_argument("--worker-id", type=int, default=0)
    p.add_argument("--rep-port", type=int, default=0, help="this worker's REP port (0: a free one)")
    p.add_argument("--peer-init-url", default=None)
    p.add_argument("--prompt-file", help="a JSON admit object ({\"chunks\": [[start, end, key], ...], ...})")
    p.add_argument("--batch-size", type=int, default=50, help="KV events per BatchedKVOperationMsg")
    p.add_argument("--sync-batch-size", type=int, default=2000, help="keys per FullSyncBatchMsg")
    p.add_argument("--heartbeat-interval", type=float, default=0.5, help="seconds; 0 sends none unasked")
    p.add_argument("--heartbeat-delay", type=float, default=0.0)
    p.add_argument("--reply-timeout", type=float, default=1.0, help="seconds to wait for a controller reply")
    p.add_argument("--register-timeout", type=float, default=20.0)
    p.add_argument("--sync-poll-interval", type=float, default=0.1)
    p.add_argument("--sync-timeout", type=float, default=15.0)
    p.add_argument("--run-seconds", type=float, default=0.0, help="exit after this long (0: at quit or end of stdin)")
    p.add_argument("--signed-keys", action="store_true", help="send keys as given (LMCache's signed builtin hash)")
    p.add_argument("--chunk-size", type=int, default=256, help="chunk size for admits without chunks (LMCache keys)")
    p.add_argument("--hash-seed", default="0", help="PYTHONHASHSEED for admits without chunks (LMCache keys)")
    p.add_argument("--self-check", metavar="GOLDEN_JSON", help="check lmcache_wire against golden vectors and exit")
    args = p.parse_args()
    if args.self_check:
        return self_check(args.self_check)
    if not args.reply or not args.pull:
        p.error("--reply and --pull are required")
    worker = Worker(args)
    signal.signal(signal.SIGTERM, lambda *_: setattr(worker, "stop", True))
    return worker.run()


if __name__ == "__main__":
    sys.exit(main())

// Writes cbor-vectors.json: golden vectors for lmcache4j's chunk hashing, produced by a CBOR
// implementation independent of lmcache4j's (the npm package `cbor`, pinned in package-lock.json)
// and Node's own SHA-256.
//
// What is reproduced is vLLM's sha256_cbor (vllm/utils/hashing.py):
//     sha256(cbor2.dumps(obj, canonical=True)).digest()
// applied to
//     NONE_HASH   = sha256_cbor(os.getenv("PYTHONHASHSEED"))        -- the seed *string*
//     block hash  = sha256_cbor((parent_hash_bytes, tuple(token_ids), None))
// (vllm/v1/core/kv_cache_utils.py: init_none_hash, hash_block_tokens). Python's cbor2 writes a
// str as a text string (major type 3), bytes as a byte string (major type 2), a tuple or list as
// an array (major type 4), an int as an unsigned (0) or negative (1) integer and None as null
// (0xf6). Canonical mode (RFC 7049 §3.9 / RFC 8949 §4.2) makes every head the shortest form.
// The JS values below map onto exactly those types: string -> text, Buffer -> bytes,
// Array -> array, integral Number -> int, null -> null; cbor.encodeCanonical gives shortest heads.
//
// Regenerate (needs Node >= 20 and the npm registry once):
//     cd engine/src/test/resources/golden && npm ci && npm run generate
// node_modules/ is git-ignored; commit package.json, package-lock.json and cbor-vectors.json.

import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import cbor from 'cbor';

const require = createRequire(import.meta.url);
const cborVersion = require('cbor/package.json').version;

// Canonical encoding, stated explicitly: shortest integer and length heads, definite lengths
// (what cbor.encodeCanonical does). The high-water mark is raised because the static encoders
// return only the first highWaterMark bytes (default 16 KiB) of a larger encoding, silently;
// every encoding is decoded again below to prove it is whole.
const encode = (value) => {
  const bytes = cbor.Encoder.encodeOne(value, { canonical: true, highWaterMark: 1 << 24 });
  const decoded = cbor.decodeAllSync(bytes); // throws on a truncated encoding
  if (decoded.length !== 1 || !isDeepStrictEqual(normalize(decoded[0]), normalize(value))) {
    throw new Error('the CBOR encoding does not decode back to its value');
  }
  return bytes;
};
// Buffers compare by content.
const normalize = (v) => (Buffer.isBuffer(v) ? `bytes:${v.toString('hex')}` : Array.isArray(v) ? v.map(normalize) : v);
const sha256 = (bytes) => createHash('sha256').update(bytes).digest();
const hex = (bytes) => Buffer.from(bytes).toString('hex');

// Integers must stay integers: a non-integral or unsafe Number would be written as a float.
function checkTokens(tokens) {
  for (const t of tokens) {
    if (!Number.isSafeInteger(t)) throw new Error(`token ${t} is not a safe integer`);
  }
  return tokens;
}

// The vLLM block-hash input: (parent, tuple(tokens), extra_keys=None). parent null = Python None,
// which is what LMCache's SegmentTokenDatabase passes (it hashes segments with no prefix hash).
function blockInput(parentHex, tokens) {
  const parent = parentHex === null ? null : Buffer.from(parentHex, 'hex');
  return [parent, checkTokens(tokens), null];
}

function noneHash(seed) {
  return sha256(encode(seed));
}

// A deterministic token stream (32-bit LCG), values below a Llama-3-sized vocabulary of 128256,
// so both 3-byte (< 65536) and 5-byte integer heads occur.
function lcgTokens(seed, count, vocab = 128256) {
  let x = seed >>> 0;
  const out = [];
  for (let i = 0; i < count; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out.push(x % vocab);
  }
  return out;
}

const SEED_0 = hex(noneHash('0'));
const COUNTING_32 = hex(Buffer.from([...Array(32).keys()]));

const noneHashCases = ['0', '1', '42', '12345', '4294967295', 'random', '', 'héllo wörld ✓'].map((seed) => ({
  seed,
  cbor_hex: hex(encode(seed)),
  sha256_hex: hex(noneHash(seed)),
}));

const boundaryTokens = [0, 1, 23, 24, 255, 256, 65535, 65536, 2147483647];
const blockSpecs = [
  { name: 'empty chunk', parent: SEED_0, tokens: [] },
  { name: 'single token 0', parent: SEED_0, tokens: [0] },
  { name: 'single token 1', parent: COUNTING_32, tokens: [1] },
  ...boundaryTokens.map((t) => ({ name: `single token ${t} (integer head boundary)`, parent: SEED_0, tokens: [t] })),
  { name: 'all integer head boundaries', parent: COUNTING_32, tokens: boundaryTokens },
  { name: 'just below each boundary', parent: COUNTING_32, tokens: [22, 23, 254, 255, 65534, 65535, 2147483646] },
  { name: 'negative integers (major type 1)', parent: COUNTING_32, tokens: [-1, -24, -25, -256, -257, -65536, -65537, -2147483648] },
  { name: 'array of 23 (1-byte array head)', parent: SEED_0, tokens: lcgTokens(1, 23) },
  { name: 'array of 24 (array head 0x98)', parent: SEED_0, tokens: lcgTokens(2, 24) },
  { name: 'array of 255', parent: SEED_0, tokens: lcgTokens(3, 255) },
  { name: 'array of 256 (array head 0x99), a full LMCache chunk', parent: SEED_0, tokens: lcgTokens(4, 256) },
  { name: 'full chunk of small tokens', parent: COUNTING_32, tokens: [...Array(256).keys()] },
  { name: 'short parent (8-byte byte string)', parent: '0102030405060708', tokens: [7, 8, 9] },
  { name: 'null parent (LMCache segment hashing)', parent: null, tokens: [100, 200, 300] },
  { name: 'null parent, empty segment', parent: null, tokens: [] },
];

const blocks = blockSpecs.map(({ name, parent, tokens }) => {
  const bytes = encode(blockInput(parent, tokens));
  return { name, parent_hex: parent, tokens, cbor_hex: hex(bytes), sha256_hex: hex(sha256(bytes)) };
});

// Arrays too long to store in full: `count` copies of `value`; only the first bytes of the CBOR
// are stored, with its length and its SHA-256.
const fillSpecs = [
  { name: 'array of 65535 (array head 0x99 ffff)', value: 5, count: 65535 },
  { name: 'array of 65536 (array head 0x9a)', value: 70000, count: 65536 },
];
const filledBlocks = fillSpecs.map(({ name, value, count }) => {
  const bytes = encode(blockInput(SEED_0, new Array(count).fill(value)));
  return {
    name, parent_hex: SEED_0, fill_value: value, fill_count: count,
    cbor_head_hex: hex(bytes.subarray(0, 48)), cbor_length: bytes.length, sha256_hex: hex(sha256(bytes)),
  };
});

// Prefix chains the way LMCache's ChunkedTokenDatabase runs them: h0 = NONE_HASH(seed),
// h_i = sha256_cbor((h_{i-1}, chunk_i, None)); a final partial chunk when save_unfull_chunk.
function chain(seed, chunkSize, tokens, saveUnfull) {
  let parent = noneHash(seed);
  const end = saveUnfull ? tokens.length : tokens.length - (tokens.length % chunkSize);
  const links = [];
  for (let start = 0; start < end; start += chunkSize) {
    const chunk = tokens.slice(start, Math.min(start + chunkSize, end));
    const bytes = encode([parent, checkTokens(chunk), null]);
    parent = sha256(bytes);
    links.push({ start, end: start + chunk.length, hash_hex: hex(parent) });
  }
  return links;
}

const chainSpecs = [
  { name: 'seed 0, chunk 256, 1000 tokens, partial last chunk', seed: '0', chunk_size: 256, save_unfull_chunk: true, tokens: lcgTokens(11, 1000) },
  { name: 'seed 0, chunk 256, 1000 tokens, partial dropped', seed: '0', chunk_size: 256, save_unfull_chunk: false, tokens: lcgTokens(11, 1000) },
  { name: 'seed 42, chunk 16, 100 tokens', seed: '42', chunk_size: 16, save_unfull_chunk: true, tokens: lcgTokens(12, 100) },
  { name: 'seed 12345, chunk 4, 10 small tokens', seed: '12345', chunk_size: 4, save_unfull_chunk: true, tokens: [...Array(10).keys()] },
  // 32 chunks or more: lmcache4j hashes these with its two-thread pipeline (ChainPipeline).
  { name: 'seed 0, chunk 256, 8300 tokens (33 chunks)', seed: '0', chunk_size: 256, save_unfull_chunk: true, tokens: lcgTokens(13, 8300) },
  { name: 'seed 7, chunk 16, 600 tokens (38 chunks)', seed: '7', chunk_size: 16, save_unfull_chunk: true, tokens: lcgTokens(14, 600) },
];
const chains = chainSpecs.map((c) => ({ ...c, none_hash_hex: hex(noneHash(c.seed)), links: chain(c.seed, c.chunk_size, c.tokens, c.save_unfull_chunk) }));

const out = {
  about: 'Golden vectors for vLLM sha256_cbor chunk hashing; generated by generate-cbor-vectors.mjs, do not edit.',
  cbor_library: `cbor@${cborVersion} encodeCanonical`,
  sha256: `node:crypto (Node ${process.version})`,
  none_hash: noneHashCases,
  blocks,
  filled_blocks: filledBlocks,
  chains,
};

const target = new URL('./cbor-vectors.json', import.meta.url);
// One vector per line: readable diffs without a line per token.
const lines = Object.entries(out).map(([key, value]) => Array.isArray(value)
  ? `  ${JSON.stringify(key)}: [\n${value.map((v) => '    ' + JSON.stringify(v)).join(',\n')}\n  ]`
  : `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
writeFileSync(target, `{\n${lines.join(',\n')}\n}\n`);
const written = JSON.parse(readFileSync(target, 'utf8'));
console.log(`wrote ${target.pathname}: ${written.none_hash.length} NONE_HASH, ${written.blocks.length + written.filled_blocks.length} block and ${written.chains.length} chain vectors`);

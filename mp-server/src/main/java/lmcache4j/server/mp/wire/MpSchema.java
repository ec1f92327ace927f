package lmcache4j.server.mp.wire;

/**
 * Which version of LMCache's request structs an encoder writes. Decoding accepts both (maps are
 * read by key, unknown keys ignored, missing ones defaulted); encoding must pick the field list,
 * because msgspec writes every field of its class and the bytes differ.
 */
public enum MpSchema {
    /**
     * {@code lmcache/v1/multiprocess/custom_types.py} at LMCache commit
     * {@code 00d6dd185e705e15daa63c01950db4e58a70578d}: the 8-field {@code IPCCacheServerKey} and a
     * registration payload ending in {@code group_layouts}.
     */
    BASE,
    /**
     * The later {@code custom_types.py} the design notes cite (code-index id 69707146292): the key
     * adds {@code request_configs}, {@code num_kv_readers} and {@code null_chunk_mask}; the payload
     * ends in {@code num_physical_slots … enable_l1_kvweave_quant}.
     */
    EXTENDED
}

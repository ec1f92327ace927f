package lmcache4j.cuda.cpu;

/**
 * The machine code of the streaming-store copy routines, one per {@link StreamingCopy.Isa}: the
 * bytes with their disassembly ({@code objdump -d -M intel}) beside them, assembled by GNU
 * {@code as} (Intel syntax) from the sources below. Both implement, in the System V AMD64 calling
 * convention:
 *
 * <pre>{@code
 * void copy(const char *src,    // rdi
 *           char *dst,          // rsi
 *           const long *runs,   // rdx: count triples {srcOffset, dstOffset, length}
 *           long count)         // rcx
 * }</pre>
 *
 * copying each run front to back with ordinary loads and non-temporal stores, then {@code sfence}
 * so every store is globally visible before the call returns. When the next run's source does not
 * follow this one's (a gather from scattered blocks), the routine prefetches it into L2 while it
 * copies this run, at the same offset, so each run's reads are requested a whole run ahead: a
 * prefetch only 1-2 KiB ahead is shorter than the memory's latency at this rate, and the hardware
 * prefetcher has nothing to follow at a new address. A contiguous source (a scatter's object) is
 * prefetched 1 KiB ahead instead. Prefetches never fault, so reading past a run's end is harmless.
 * The routines touch only caller-saved registers (rax, r8-r11 and vector registers 0-3; the AVX2
 * routine ends with {@code vzeroupper}).
 *
 * <p>The routines trust their arguments: {@link StreamingCopyBatch} only passes runs that are in
 * bounds of live segments, a positive whole number of unrolled steps long
 * ({@link StreamingCopy.Isa#granule()}), with {@code dst + dstOffset} aligned as the store
 * instruction demands ({@link StreamingCopy.Isa#alignment()}; a misaligned {@code movntdq} faults).
 *
 * <p>The AVX2 source (SSE2: {@code movdqu}/{@code movntdq} on xmm registers, 16-byte offsets,
 * 64-byte steps, one prefetch a step and no {@code vzeroupper}):
 *
 * <pre>
 *     test rcx, rcx
 *     jz done
 *   run:
 *     mov r8, [rdx]
 *     mov r9, [rdx+8]
 *     mov r10, [rdx+16]
 *     add r8, rdi
 *     add r9, rsi
 *     lea r11, [r8+1024]
 *     cmp rcx, 1
 *     je step
 *     mov rax, [rdx+24]
 *     add rax, rdi
 *     sub rax, r10
 *     cmp rax, r8
 *     je step
 *     lea r11, [rax+r10]
 *   step:
 *     prefetcht1 [r11]
 *     prefetcht1 [r11+64]
 *     vmovdqu ymm0, [r8+0]
 *     vmovdqu ymm1, [r8+32]
 *     vmovdqu ymm2, [r8+64]
 *     vmovdqu ymm3, [r8+96]
 *     vmovntdq [r9+0], ymm0
 *     vmovntdq [r9+32], ymm1
 *     vmovntdq [r9+64], ymm2
 *     vmovntdq [r9+96], ymm3
 *     add r8, 128
 *     add r9, 128
 *     add r11, 128
 *     sub r10, 128
 *     jnz step
 *     add rdx, 24
 *     dec rcx
 *     jnz run
 *   done:
 *     vzeroupper
 *     sfence
 *     ret
 * </pre>
 */
final class StreamingCopyCode {
    private StreamingCopyCode() {
    }

    /** SSE2 (every x86-64 CPU): 64 bytes a step through xmm0-xmm3, 16-byte aligned stores. */
    static byte[] sse2() {
        return new byte[] {
            0x48, (byte) 0x85, (byte) 0xc9,                                         //  0: test rcx, rcx
            0x74, 0x7e,                                                             //  3: je 0x83 (done)
            0x4c, (byte) 0x8b, 0x02,                                                //  5: mov r8, [rdx]
            0x4c, (byte) 0x8b, 0x4a, 0x08,                                          //  8: mov r9, [rdx+0x8]
            0x4c, (byte) 0x8b, 0x52, 0x10,                                          //  c: mov r10, [rdx+0x10]
            0x49, 0x01, (byte) 0xf8,                                                // 10: add r8, rdi
            0x49, 0x01, (byte) 0xf1,                                                // 13: add r9, rsi
            0x4d, (byte) 0x8d, (byte) 0x98, 0x00, 0x04, 0x00, 0x00,                 // 16: lea r11, [r8+0x400]
            0x48, (byte) 0x83, (byte) 0xf9, 0x01,                                   // 1d: cmp rcx, 0x1
            0x74, 0x13,                                                             // 21: je 0x36 (step)
            0x48, (byte) 0x8b, 0x42, 0x18,                                          // 23: mov rax, [rdx+0x18]
            0x48, 0x01, (byte) 0xf8,                                                // 27: add rax, rdi
            0x4c, 0x29, (byte) 0xd0,                                                // 2a: sub rax, r10
            0x4c, 0x39, (byte) 0xc0,                                                // 2d: cmp rax, r8
            0x74, 0x04,                                                             // 30: je 0x36 (step)
            0x4e, (byte) 0x8d, 0x1c, 0x10,                                          // 32: lea r11, [rax+r10*1]
            0x41, 0x0f, 0x18, 0x13,                                                 // 36: step: prefetcht1 [r11]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x00,                                    // 3a: movdqu xmm0, [r8]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x48, 0x10,                              // 3f: movdqu xmm1, [r8+0x10]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x50, 0x20,                              // 45: movdqu xmm2, [r8+0x20]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x58, 0x30,                              // 4b: movdqu xmm3, [r8+0x30]
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x01,                                    // 51: movntdq [r9], xmm0
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x49, 0x10,                              // 56: movntdq [r9+0x10], xmm1
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x51, 0x20,                              // 5c: movntdq [r9+0x20], xmm2
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x59, 0x30,                              // 62: movntdq [r9+0x30], xmm3
            0x49, (byte) 0x83, (byte) 0xc0, 0x40,                                   // 68: add r8, 0x40
            0x49, (byte) 0x83, (byte) 0xc1, 0x40,                                   // 6c: add r9, 0x40
            0x49, (byte) 0x83, (byte) 0xc3, 0x40,                                   // 70: add r11, 0x40
            0x49, (byte) 0x83, (byte) 0xea, 0x40,                                   // 74: sub r10, 0x40
            0x75, (byte) 0xbc,                                                      // 78: jne 0x36 (step)
            0x48, (byte) 0x83, (byte) 0xc2, 0x18,                                   // 7a: add rdx, 0x18
            0x48, (byte) 0xff, (byte) 0xc9,                                         // 7e: dec rcx
            0x75, (byte) 0x82,                                                      // 81: jne 0x5
            0x0f, (byte) 0xae, (byte) 0xf8,                                         // 83: done: sfence
            (byte) 0xc3,                                                            // 86: ret
        };
    }

    /** AVX2: 128 bytes a step through ymm0-ymm3, 32-byte aligned stores. */
    static byte[] avx2() {
        return new byte[] {
            0x48, (byte) 0x85, (byte) 0xc9,                                         //  0: test rcx, rcx
            0x0f, (byte) 0x84, (byte) 0x93, 0x00, 0x00, 0x00,                       //  3: je 0x9c (done)
            0x4c, (byte) 0x8b, 0x02,                                                //  9: run: mov r8, [rdx]
            0x4c, (byte) 0x8b, 0x4a, 0x08,                                          //  c: mov r9, [rdx+0x8]
            0x4c, (byte) 0x8b, 0x52, 0x10,                                          // 10: mov r10, [rdx+0x10]
            0x49, 0x01, (byte) 0xf8,                                                // 14: add r8, rdi
            0x49, 0x01, (byte) 0xf1,                                                // 17: add r9, rsi
            0x4d, (byte) 0x8d, (byte) 0x98, 0x00, 0x04, 0x00, 0x00,                 // 1a: lea r11, [r8+0x400]
            0x48, (byte) 0x83, (byte) 0xf9, 0x01,                                   // 21: cmp rcx, 0x1
            0x74, 0x13,                                                             // 25: je 0x3a (step)
            0x48, (byte) 0x8b, 0x42, 0x18,                                          // 27: mov rax, [rdx+0x18]
            0x48, 0x01, (byte) 0xf8,                                                // 2b: add rax, rdi
            0x4c, 0x29, (byte) 0xd0,                                                // 2e: sub rax, r10
            0x4c, 0x39, (byte) 0xc0,                                                // 31: cmp rax, r8
            0x74, 0x04,                                                             // 34: je 0x3a (step)
            0x4e, (byte) 0x8d, 0x1c, 0x10,                                          // 36: lea r11, [rax+r10*1]
            0x41, 0x0f, 0x18, 0x13,                                                 // 3a: step: prefetcht1 [r11]
            0x41, 0x0f, 0x18, 0x53, 0x40,                                           // 3e: prefetcht1 [r11+0x40]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x00,                             // 43: vmovdqu ymm0, [r8]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x48, 0x20,                       // 48: vmovdqu ymm1, [r8+0x20]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x50, 0x40,                       // 4e: vmovdqu ymm2, [r8+0x40]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x58, 0x60,                       // 54: vmovdqu ymm3, [r8+0x60]
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x01,                      // 5a: vmovntdq [r9], ymm0
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x49, 0x20,                // 5f: vmovntdq [r9+0x20], ymm1
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x51, 0x40,                // 65: vmovntdq [r9+0x40], ymm2
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x59, 0x60,                // 6b: vmovntdq [r9+0x60], ymm3
            0x49, (byte) 0x81, (byte) 0xc0, (byte) 0x80, 0x00, 0x00, 0x00,          // 71: add r8, 0x80
            0x49, (byte) 0x81, (byte) 0xc1, (byte) 0x80, 0x00, 0x00, 0x00,          // 78: add r9, 0x80
            0x49, (byte) 0x81, (byte) 0xc3, (byte) 0x80, 0x00, 0x00, 0x00,          // 7f: add r11, 0x80
            0x49, (byte) 0x81, (byte) 0xea, (byte) 0x80, 0x00, 0x00, 0x00,          // 86: sub r10, 0x80
            0x75, (byte) 0xab,                                                      // 8d: jne 0x3a (step)
            0x48, (byte) 0x83, (byte) 0xc2, 0x18,                                   // 8f: add rdx, 0x18
            0x48, (byte) 0xff, (byte) 0xc9,                                         // 93: dec rcx
            0x0f, (byte) 0x85, 0x6d, (byte) 0xff, (byte) 0xff, (byte) 0xff,         // 96: jne 0x9 (run)
            (byte) 0xc5, (byte) 0xf8, 0x77,                                         // 9c: done: vzeroupper
            0x0f, (byte) 0xae, (byte) 0xf8,                                         // 9f: sfence
            (byte) 0xc3,                                                            // a2: ret
        };
    }
}

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
 * so every store is globally visible before the call returns. While a run is copied, its source
 * 1 KiB ahead and the first 512 bytes of the next run's source are prefetched: the runs of a
 * gather start at scattered addresses where the hardware prefetcher has nothing to follow yet
 * (about a tenth more for one thread here). Prefetches never fault, so reading past a run's end
 * is harmless. The routines touch only caller-saved registers (r8-r11 and vector registers 0-3;
 * the AVX2 routine ends with {@code vzeroupper}).
 *
 * <p>The routines trust their arguments: {@link StreamingCopyBatch} only passes runs that are in
 * bounds of live segments, a positive whole number of unrolled steps long
 * ({@link StreamingCopy.Isa#granule()}), with {@code dst + dstOffset} aligned as the store
 * instruction demands ({@link StreamingCopy.Isa#alignment()}; a misaligned {@code movntdq} faults).
 *
 * <p>The AVX2 source (SSE2: {@code movdqu}/{@code movntdq} on xmm registers, 16-byte offsets,
 * 64-byte steps, one in-loop prefetch and no {@code vzeroupper}):
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
 *     cmp rcx, 1
 *     je step
 *     mov r11, [rdx+24]
 *     add r11, rdi
 *     prefetcht0 [r11+0]
 *     prefetcht0 [r11+64]
 *     prefetcht0 [r11+128]
 *     prefetcht0 [r11+192]
 *     prefetcht0 [r11+256]
 *     prefetcht0 [r11+320]
 *     prefetcht0 [r11+384]
 *     prefetcht0 [r11+448]
 *   step:
 *     prefetcht0 [r8+1024]
 *     prefetcht0 [r8+1088]
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
            0x0f, (byte) 0x84, (byte) 0xa8, 0x00, 0x00, 0x00,                       //  3: je 0xb1 (done)
            0x4c, (byte) 0x8b, 0x02,                                                //  9: run: mov r8, [rdx]
            0x4c, (byte) 0x8b, 0x4a, 0x08,                                          //  c: mov r9, [rdx+0x8]
            0x4c, (byte) 0x8b, 0x52, 0x10,                                          // 10: mov r10, [rdx+0x10]
            0x49, 0x01, (byte) 0xf8,                                                // 14: add r8, rdi
            0x49, 0x01, (byte) 0xf1,                                                // 17: add r9, rsi
            0x48, (byte) 0x83, (byte) 0xf9, 0x01,                                   // 1a: cmp rcx, 0x1
            0x74, 0x40,                                                             // 1e: je 0x60 (step)
            0x4c, (byte) 0x8b, 0x5a, 0x18,                                          // 20: mov r11, [rdx+0x18]
            0x49, 0x01, (byte) 0xfb,                                                // 24: add r11, rdi
            0x41, 0x0f, 0x18, 0x0b,                                                 // 27: prefetcht0 [r11]
            0x41, 0x0f, 0x18, 0x4b, 0x40,                                           // 2b: prefetcht0 [r11+0x40]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0x80, 0x00, 0x00, 0x00,           // 30: prefetcht0 [r11+0x80]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0xc0, 0x00, 0x00, 0x00,           // 38: prefetcht0 [r11+0xc0]
            0x41, 0x0f, 0x18, (byte) 0x8b, 0x00, 0x01, 0x00, 0x00,                  // 40: prefetcht0 [r11+0x100]
            0x41, 0x0f, 0x18, (byte) 0x8b, 0x40, 0x01, 0x00, 0x00,                  // 48: prefetcht0 [r11+0x140]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0x80, 0x01, 0x00, 0x00,           // 50: prefetcht0 [r11+0x180]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0xc0, 0x01, 0x00, 0x00,           // 58: prefetcht0 [r11+0x1c0]
            0x41, 0x0f, 0x18, (byte) 0x88, 0x00, 0x04, 0x00, 0x00,                  // 60: step: prefetcht0 [r8+0x400]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x00,                                    // 68: movdqu xmm0, [r8]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x48, 0x10,                              // 6d: movdqu xmm1, [r8+0x10]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x50, 0x20,                              // 73: movdqu xmm2, [r8+0x20]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x58, 0x30,                              // 79: movdqu xmm3, [r8+0x30]
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x01,                                    // 7f: movntdq [r9], xmm0
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x49, 0x10,                              // 84: movntdq [r9+0x10], xmm1
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x51, 0x20,                              // 8a: movntdq [r9+0x20], xmm2
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x59, 0x30,                              // 90: movntdq [r9+0x30], xmm3
            0x49, (byte) 0x83, (byte) 0xc0, 0x40,                                   // 96: add r8, 0x40
            0x49, (byte) 0x83, (byte) 0xc1, 0x40,                                   // 9a: add r9, 0x40
            0x49, (byte) 0x83, (byte) 0xea, 0x40,                                   // 9e: sub r10, 0x40
            0x75, (byte) 0xbc,                                                      // a2: jne 0x60 (step)
            0x48, (byte) 0x83, (byte) 0xc2, 0x18,                                   // a4: add rdx, 0x18
            0x48, (byte) 0xff, (byte) 0xc9,                                         // a8: dec rcx
            0x0f, (byte) 0x85, 0x58, (byte) 0xff, (byte) 0xff, (byte) 0xff,         // ab: jne 0x9 (run)
            0x0f, (byte) 0xae, (byte) 0xf8,                                         // b1: done: sfence
            (byte) 0xc3,                                                            // b4: ret
        };
    }

    /** AVX2: 128 bytes a step through ymm0-ymm3, 32-byte aligned stores. */
    static byte[] avx2() {
        return new byte[] {
            0x48, (byte) 0x85, (byte) 0xc9,                                         //  0: test rcx, rcx
            0x0f, (byte) 0x84, (byte) 0xb9, 0x00, 0x00, 0x00,                       //  3: je 0xc2 (done)
            0x4c, (byte) 0x8b, 0x02,                                                //  9: run: mov r8, [rdx]
            0x4c, (byte) 0x8b, 0x4a, 0x08,                                          //  c: mov r9, [rdx+0x8]
            0x4c, (byte) 0x8b, 0x52, 0x10,                                          // 10: mov r10, [rdx+0x10]
            0x49, 0x01, (byte) 0xf8,                                                // 14: add r8, rdi
            0x49, 0x01, (byte) 0xf1,                                                // 17: add r9, rsi
            0x48, (byte) 0x83, (byte) 0xf9, 0x01,                                   // 1a: cmp rcx, 0x1
            0x74, 0x40,                                                             // 1e: je 0x60 (step)
            0x4c, (byte) 0x8b, 0x5a, 0x18,                                          // 20: mov r11, [rdx+0x18]
            0x49, 0x01, (byte) 0xfb,                                                // 24: add r11, rdi
            0x41, 0x0f, 0x18, 0x0b,                                                 // 27: prefetcht0 [r11]
            0x41, 0x0f, 0x18, 0x4b, 0x40,                                           // 2b: prefetcht0 [r11+0x40]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0x80, 0x00, 0x00, 0x00,           // 30: prefetcht0 [r11+0x80]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0xc0, 0x00, 0x00, 0x00,           // 38: prefetcht0 [r11+0xc0]
            0x41, 0x0f, 0x18, (byte) 0x8b, 0x00, 0x01, 0x00, 0x00,                  // 40: prefetcht0 [r11+0x100]
            0x41, 0x0f, 0x18, (byte) 0x8b, 0x40, 0x01, 0x00, 0x00,                  // 48: prefetcht0 [r11+0x140]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0x80, 0x01, 0x00, 0x00,           // 50: prefetcht0 [r11+0x180]
            0x41, 0x0f, 0x18, (byte) 0x8b, (byte) 0xc0, 0x01, 0x00, 0x00,           // 58: prefetcht0 [r11+0x1c0]
            0x41, 0x0f, 0x18, (byte) 0x88, 0x00, 0x04, 0x00, 0x00,                  // 60: step: prefetcht0 [r8+0x400]
            0x41, 0x0f, 0x18, (byte) 0x88, 0x40, 0x04, 0x00, 0x00,                  // 68: prefetcht0 [r8+0x440]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x00,                             // 70: vmovdqu ymm0, [r8]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x48, 0x20,                       // 75: vmovdqu ymm1, [r8+0x20]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x50, 0x40,                       // 7b: vmovdqu ymm2, [r8+0x40]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x58, 0x60,                       // 81: vmovdqu ymm3, [r8+0x60]
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x01,                      // 87: vmovntdq [r9], ymm0
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x49, 0x20,                // 8c: vmovntdq [r9+0x20], ymm1
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x51, 0x40,                // 92: vmovntdq [r9+0x40], ymm2
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x59, 0x60,                // 98: vmovntdq [r9+0x60], ymm3
            0x49, (byte) 0x81, (byte) 0xc0, (byte) 0x80, 0x00, 0x00, 0x00,          // 9e: add r8, 0x80
            0x49, (byte) 0x81, (byte) 0xc1, (byte) 0x80, 0x00, 0x00, 0x00,          // a5: add r9, 0x80
            0x49, (byte) 0x81, (byte) 0xea, (byte) 0x80, 0x00, 0x00, 0x00,          // ac: sub r10, 0x80
            0x75, (byte) 0xab,                                                      // b3: jne 0x60 (step)
            0x48, (byte) 0x83, (byte) 0xc2, 0x18,                                   // b5: add rdx, 0x18
            0x48, (byte) 0xff, (byte) 0xc9,                                         // b9: dec rcx
            0x0f, (byte) 0x85, 0x47, (byte) 0xff, (byte) 0xff, (byte) 0xff,         // bc: jne 0x9 (run)
            (byte) 0xc5, (byte) 0xf8, 0x77,                                         // c2: done: vzeroupper
            0x0f, (byte) 0xae, (byte) 0xf8,                                         // c5: sfence
            (byte) 0xc3,                                                            // c8: ret
        };
    }
}

package lmcache4j.cuda.cpu;

/**
 * The machine code of the streaming-store copy routines, one per {@link StreamingCopy.Isa}, as GNU
 * {@code as} assembles their sources, {@code src/main/asm/streaming-copy-sse2.s} and
 * {@code streaming-copy-avx2.s} in this module (Intel syntax; the sources say what each instruction
 * is for). Each byte array line is one instruction with its disassembly ({@code objdump -d -M intel}).
 * {@code StreamingCopySourceTest} reassembles the sources and compares; when a source changes, its
 * failure message gives the new lines. Both routines implement, in the System V AMD64 calling
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
 * so every store is globally visible before the call returns, prefetching the next run's source a
 * whole run ahead when it lies elsewhere (a gather from scattered blocks). Each starts with
 * {@code endbr64}, so it is a valid target of the linker's indirect call where the CPU enforces
 * indirect-branch tracking (CET). The routines touch only caller-saved registers (rax, r8-r11 and
 * vector registers 0-3; the AVX2 routine ends with {@code vzeroupper}).
 *
 * <p>The routines trust their arguments: {@link StreamingCopyBatch} only passes runs that are in
 * bounds of live segments, a positive whole number of unrolled steps long
 * ({@link StreamingCopy.Isa#granule()}), with {@code dst + dstOffset} aligned as the store
 * instruction demands ({@link StreamingCopy.Isa#alignment()}; a misaligned {@code movntdq} faults).
 */
final class StreamingCopyCode {
    private StreamingCopyCode() {
    }

    /** SSE2 (every x86-64 CPU): 64 bytes a step through xmm0-xmm3, 16-byte aligned stores. */
    static byte[] sse2() {
        return new byte[] {
            (byte) 0xf3, 0x0f, 0x1e, (byte) 0xfa,                                   //  0: endbr64
            0x48, (byte) 0x85, (byte) 0xc9,                                         //  4: test rcx, rcx
            0x74, 0x7e,                                                             //  7: je 0x87 (done)
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
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x00,                                    // 3e: movdqu xmm0, [r8]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x48, 0x10,                              // 43: movdqu xmm1, [r8+0x10]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x50, 0x20,                              // 49: movdqu xmm2, [r8+0x20]
            (byte) 0xf3, 0x41, 0x0f, 0x6f, 0x58, 0x30,                              // 4f: movdqu xmm3, [r8+0x30]
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x01,                                    // 55: movntdq [r9], xmm0
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x49, 0x10,                              // 5a: movntdq [r9+0x10], xmm1
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x51, 0x20,                              // 60: movntdq [r9+0x20], xmm2
            0x66, 0x41, 0x0f, (byte) 0xe7, 0x59, 0x30,                              // 66: movntdq [r9+0x30], xmm3
            0x49, (byte) 0x83, (byte) 0xc0, 0x40,                                   // 6c: add r8, 0x40
            0x49, (byte) 0x83, (byte) 0xc1, 0x40,                                   // 70: add r9, 0x40
            0x49, (byte) 0x83, (byte) 0xc3, 0x40,                                   // 74: add r11, 0x40
            0x49, (byte) 0x83, (byte) 0xea, 0x40,                                   // 78: sub r10, 0x40
            0x75, (byte) 0xbc,                                                      // 7c: jne 0x3a (step)
            0x48, (byte) 0x83, (byte) 0xc2, 0x18,                                   // 7e: add rdx, 0x18
            0x48, (byte) 0xff, (byte) 0xc9,                                         // 82: dec rcx
            0x75, (byte) 0x82,                                                      // 85: jne 0x9 (run)
            0x0f, (byte) 0xae, (byte) 0xf8,                                         // 87: done: sfence
            (byte) 0xc3,                                                            // 8a: ret
        };
    }

    /** AVX2: 128 bytes a step through ymm0-ymm3, 32-byte aligned stores. */
    static byte[] avx2() {
        return new byte[] {
            (byte) 0xf3, 0x0f, 0x1e, (byte) 0xfa,                                   //  0: endbr64
            0x48, (byte) 0x85, (byte) 0xc9,                                         //  4: test rcx, rcx
            0x0f, (byte) 0x84, (byte) 0x93, 0x00, 0x00, 0x00,                       //  7: je 0xa0 (done)
            0x4c, (byte) 0x8b, 0x02,                                                //  d: run: mov r8, [rdx]
            0x4c, (byte) 0x8b, 0x4a, 0x08,                                          // 10: mov r9, [rdx+0x8]
            0x4c, (byte) 0x8b, 0x52, 0x10,                                          // 14: mov r10, [rdx+0x10]
            0x49, 0x01, (byte) 0xf8,                                                // 18: add r8, rdi
            0x49, 0x01, (byte) 0xf1,                                                // 1b: add r9, rsi
            0x4d, (byte) 0x8d, (byte) 0x98, 0x00, 0x04, 0x00, 0x00,                 // 1e: lea r11, [r8+0x400]
            0x48, (byte) 0x83, (byte) 0xf9, 0x01,                                   // 25: cmp rcx, 0x1
            0x74, 0x13,                                                             // 29: je 0x3e (step)
            0x48, (byte) 0x8b, 0x42, 0x18,                                          // 2b: mov rax, [rdx+0x18]
            0x48, 0x01, (byte) 0xf8,                                                // 2f: add rax, rdi
            0x4c, 0x29, (byte) 0xd0,                                                // 32: sub rax, r10
            0x4c, 0x39, (byte) 0xc0,                                                // 35: cmp rax, r8
            0x74, 0x04,                                                             // 38: je 0x3e (step)
            0x4e, (byte) 0x8d, 0x1c, 0x10,                                          // 3a: lea r11, [rax+r10*1]
            0x41, 0x0f, 0x18, 0x13,                                                 // 3e: step: prefetcht1 [r11]
            0x41, 0x0f, 0x18, 0x53, 0x40,                                           // 42: prefetcht1 [r11+0x40]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x00,                             // 47: vmovdqu ymm0, [r8]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x48, 0x20,                       // 4c: vmovdqu ymm1, [r8+0x20]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x50, 0x40,                       // 52: vmovdqu ymm2, [r8+0x40]
            (byte) 0xc4, (byte) 0xc1, 0x7e, 0x6f, 0x58, 0x60,                       // 58: vmovdqu ymm3, [r8+0x60]
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x01,                      // 5e: vmovntdq [r9], ymm0
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x49, 0x20,                // 63: vmovntdq [r9+0x20], ymm1
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x51, 0x40,                // 69: vmovntdq [r9+0x40], ymm2
            (byte) 0xc4, (byte) 0xc1, 0x7d, (byte) 0xe7, 0x59, 0x60,                // 6f: vmovntdq [r9+0x60], ymm3
            0x49, (byte) 0x81, (byte) 0xc0, (byte) 0x80, 0x00, 0x00, 0x00,          // 75: add r8, 0x80
            0x49, (byte) 0x81, (byte) 0xc1, (byte) 0x80, 0x00, 0x00, 0x00,          // 7c: add r9, 0x80
            0x49, (byte) 0x81, (byte) 0xc3, (byte) 0x80, 0x00, 0x00, 0x00,          // 83: add r11, 0x80
            0x49, (byte) 0x81, (byte) 0xea, (byte) 0x80, 0x00, 0x00, 0x00,          // 8a: sub r10, 0x80
            0x75, (byte) 0xab,                                                      // 91: jne 0x3e (step)
            0x48, (byte) 0x83, (byte) 0xc2, 0x18,                                   // 93: add rdx, 0x18
            0x48, (byte) 0xff, (byte) 0xc9,                                         // 97: dec rcx
            0x0f, (byte) 0x85, 0x6d, (byte) 0xff, (byte) 0xff, (byte) 0xff,         // 9a: jne 0xd (run)
            (byte) 0xc5, (byte) 0xf8, 0x77,                                         // a0: done: vzeroupper
            0x0f, (byte) 0xae, (byte) 0xf8,                                         // a3: sfence
            (byte) 0xc3,                                                            // a6: ret
        };
    }
}

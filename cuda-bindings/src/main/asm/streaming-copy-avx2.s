# lmcache4j's streaming-store copy, AVX2: 128 bytes a step through ymm0-ymm3, 32-byte aligned
# non-temporal stores. StreamingCopyCode.avx2() holds these bytes as GNU as assembles them
# (StreamingCopyCodeTest reassembles this file and compares); StreamingCopy runs them.
#
# void copy(const char *src,    // rdi
#           char *dst,          // rsi
#           const long *runs,   // rdx: count triples {srcOffset, dstOffset, length}
#           long count)         // rcx
#
# Each run is copied front to back, ordinary loads and non-temporal stores, then sfence makes every
# store globally visible before the return. When the next run's source does not follow this one's
# (a gather's scattered blocks) its first bytes are prefetched into L2 while this run is copied, at
# the same offset: the hardware prefetcher has nothing to follow at a new address, and a prefetch
# only 1-2 KiB ahead is shorter than the memory's latency. A contiguous source is prefetched 1 KiB
# ahead. Prefetches never fault. Only caller-saved registers are touched (rax, r8-r11, ymm0-ymm3).
# The caller (StreamingCopyBatch) guarantees: runs inside live segments, lengths a positive
# multiple of 128, destinations 32-byte aligned (vmovntdq faults otherwise).

        .intel_syntax noprefix
        .text
        endbr64                         # a valid indirect-branch target where CET is enforced
        test rcx, rcx
        jz done
run:
        mov r8, [rdx]                   # srcOffset
        mov r9, [rdx+8]                 # dstOffset
        mov r10, [rdx+16]               # length
        add r8, rdi
        add r9, rsi
        lea r11, [r8+1024]              # prefetch 1 KiB ahead in a contiguous source
        cmp rcx, 1
        je step
        mov rax, [rdx+24]               # the next run's source, less this run's length:
        add rax, rdi                    # prefetching r11 = rax + r10 at the same offset as
        sub rax, r10                    # r8 reads the next run a whole run ahead
        cmp rax, r8
        je step                         # the next run follows this one: contiguous
        lea r11, [rax+r10]
step:
        prefetcht1 [r11]
        prefetcht1 [r11+64]
        vmovdqu ymm0, [r8]
        vmovdqu ymm1, [r8+32]
        vmovdqu ymm2, [r8+64]
        vmovdqu ymm3, [r8+96]
        vmovntdq [r9], ymm0
        vmovntdq [r9+32], ymm1
        vmovntdq [r9+64], ymm2
        vmovntdq [r9+96], ymm3
        add r8, 128
        add r9, 128
        add r11, 128
        sub r10, 128
        jnz step
        add rdx, 24
        dec rcx
        jnz run
done:
        vzeroupper                      # no AVX-SSE transition penalty in the caller
        sfence
        ret

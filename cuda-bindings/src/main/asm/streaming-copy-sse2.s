# lmcache4j's streaming-store copy, SSE2 (every x86-64 CPU): 64 bytes a step through xmm0-xmm3,
# 16-byte aligned non-temporal stores. StreamingCopyCode.sse2() holds these bytes as GNU as
# assembles them (StreamingCopyCodeTest reassembles this file and compares); StreamingCopy runs them.
#
# The same routine as streaming-copy-avx2.s (see there), with 16-byte registers, one prefetch a
# step and no vzeroupper. The caller guarantees lengths a positive multiple of 64 and destinations
# 16-byte aligned (movntdq faults otherwise).

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
        mov rax, [rdx+24]               # the next run's source, less this run's length
        add rax, rdi
        sub rax, r10
        cmp rax, r8
        je step                         # the next run follows this one: contiguous
        lea r11, [rax+r10]
step:
        prefetcht1 [r11]
        movdqu xmm0, [r8]
        movdqu xmm1, [r8+16]
        movdqu xmm2, [r8+32]
        movdqu xmm3, [r8+48]
        movntdq [r9], xmm0
        movntdq [r9+16], xmm1
        movntdq [r9+32], xmm2
        movntdq [r9+48], xmm3
        add r8, 64
        add r9, 64
        add r11, 64
        sub r10, 64
        jnz step
        add rdx, 24
        dec rcx
        jnz run
done:
        sfence
        ret

#!/usr/bin/env bash
# Regenerates the jextract FFM bindings of cuda-bindings:
#   src/main/java/lmcache4j/cuda/internal/cudart  (from cudart.args, CUDA runtime API headers)
#   src/main/java/lmcache4j/cuda/internal/libc    (from libc.args + libc.h, glibc/Linux headers)
# Requires `jextract` on PATH and a JDK 25 (JAVA_HOME, or java on PATH) for PostProcess.java
# (see README.md in this directory).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."   # -> cuda-bindings/

if ! command -v jextract >/dev/null 2>&1; then
    echo "error: 'jextract' not found on PATH." >&2
    echo "       jextract is not packaged; build it from the openjdk/jextract source" >&2
    echo "       (https://github.com/openjdk/jextract) against libclang (e.g. Debian's libclang1-14 +" >&2
    echo "       libclang-common-14-dev) with a JDK 25, and put its launcher on PATH." >&2
    exit 1
fi

jextract --version

if [[ ! -f /usr/local/cuda/include/cuda_runtime_api.h ]]; then
    echo "error: /usr/local/cuda/include/cuda_runtime_api.h not found (CUDA toolkit headers required)" >&2
    exit 1
fi

gen_root=src/main/java/lmcache4j/cuda/internal
rm -rf "$gen_root/cudart" "$gen_root/libc"

echo "== jextract @jextract/cudart.args"
jextract @jextract/cudart.args
echo "== jextract @jextract/libc.args"
jextract @jextract/libc.args

# lmcache4j's one change to jextract's output, applied mechanically (see PostProcess.java): the
# function holders take Downcalls' descriptors and handles, syscall is address-only, no upcalls.
echo "== post-processing (jextract/PostProcess.java)"
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
"$java_bin" jextract/PostProcess.java "$gen_root"

echo "generated:"
find "$gen_root/cudart" "$gen_root/libc" -name '*.java' | sort

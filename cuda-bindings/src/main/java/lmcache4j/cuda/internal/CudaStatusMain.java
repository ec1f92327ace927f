package lmcache4j.cuda.internal;

import lmcache4j.cuda.CudaRuntime;

/**
 * {@code java --enable-native-access=lmcache4j.cuda -p <jars> -m lmcache4j.cuda/lmcache4j.cuda.internal.CudaStatusMain}:
 * prints whether the CUDA runtime is usable here and why not, honouring {@code LMCACHE_CUDART}
 * and {@code -Dlmcache4j.cudart}. Exit status 0 when available, 3 when not.
 */
public final class CudaStatusMain {
    private CudaStatusMain() {
    }

    public static void main(String[] args) {
        CudaRuntime runtime = CudaRuntime.load();
        System.out.println("CUDA runtime " + runtime.status());
        System.exit(runtime.isAvailable() ? 0 : 3);
    }
}

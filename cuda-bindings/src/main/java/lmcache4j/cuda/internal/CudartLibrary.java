package lmcache4j.cuda.internal;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Finds and loads {@code libcudart} into this module's class loader, once per process, without
 * ever throwing. The jextract-generated {@code cudart_h} resolves its symbols through
 * {@link SymbolLookup#loaderLookup()}, so it works only after a successful {@link #load}; until
 * then nothing may touch its function accessors (their holder classes would fail to initialise
 * for good).
 *
 * <p>Where it looks, in order: an explicit path; the system property {@value #PATH_PROPERTY};
 * the environment variable {@value #PATH_ENV}; every directory of {@code java.library.path};
 * {@code $CUDA_HOME/lib64}, {@code $CUDA_PATH/lib64}, {@code /usr/local/cuda/lib64} and the
 * distribution library directories. In each directory {@code libcudart.so} is tried first, then
 * the versioned names that runtime-only installs ship.
 */
public final class CudartLibrary {
    public static final String PATH_PROPERTY = "lmcache4j.cudart";
    public static final String PATH_ENV = "LMCACHE_CUDART";

    private static final List<String> FILE_NAMES = List.of("libcudart.so", "libcudart.so.13", "libcudart.so.12");
    private static final List<String> STANDARD_DIRS = List.of(
            "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib");

    /** Every cudart symbol the generated bindings use: checked before the runtime is declared usable. */
    public static final List<String> REQUIRED_SYMBOLS = List.of(
            "cudaGetDeviceCount", "cudaGetDevice", "cudaSetDevice", "cudaGetErrorString", "cudaGetErrorName",
            "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaMalloc", "cudaFree", "cudaHostAlloc",
            "cudaFreeHost", "cudaHostRegister", "cudaHostUnregister", "cudaHostGetDevicePointer", "cudaMemcpy",
            "cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemsetAsync", "cudaStreamCreate",
            "cudaStreamCreateWithFlags", "cudaStreamDestroy", "cudaStreamSynchronize", "cudaStreamWaitEvent",
            "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventRecord", "cudaEventSynchronize",
            "cudaEventElapsedTime", "cudaEventDestroy", "cudaDeviceSynchronize", "cudaMemGetInfo",
            "cudaPointerGetAttributes", "cudaIpcGetMemHandle", "cudaIpcOpenMemHandle", "cudaIpcCloseMemHandle",
            "cudaGetLastError");

    /** The outcome of a load: the library now bound, or why none is. */
    public sealed interface Outcome permits Loaded, NotFound, NotLoadable, Incompatible, Conflict {
    }

    /** {@code libcudart} at {@code path} is loaded and has every required symbol. */
    public record Loaded(Path path) implements Outcome {
    }

    /** No library file at any place looked at. */
    public record NotFound(List<String> lookedAt) implements Outcome {
    }

    /** A file was found but the dynamic loader refused it. */
    public record NotLoadable(Path path, String loaderMessage) implements Outcome {
    }

    /** The library loaded but lacks symbols the bindings need (a runtime older than CUDA 11). */
    public record Incompatible(Path path, List<String> missingSymbols) implements Outcome {
    }

    /** Another {@code libcudart} is already bound in this process; only one can be. */
    public record Conflict(Path requested, Path alreadyLoaded) implements Outcome {
    }

    private static Path loadedPath;

    private CudartLibrary() {
    }

    /** Loads from the first place in the search order that has the library. */
    public static synchronized Outcome loadDefault() {
        List<Path> candidates = new ArrayList<>();
        String property = System.getProperty(PATH_PROPERTY);
        String env = System.getenv(PATH_ENV);
        if (property != null && !property.isBlank()) {
            return load(Path.of(property));
        }
        if (env != null && !env.isBlank()) {
            return load(Path.of(env));
        }
        Set<String> dirs = new LinkedHashSet<>();
        for (String dir : System.getProperty("java.library.path", "").split(File.pathSeparator)) {
            if (!dir.isBlank()) {
                dirs.add(dir);
            }
        }
        for (String var : List.of("CUDA_HOME", "CUDA_PATH")) {
            String home = System.getenv(var);
            if (home != null && !home.isBlank()) {
                dirs.add(Path.of(home, "lib64").toString());
            }
        }
        dirs.addAll(STANDARD_DIRS);
        for (String dir : dirs) {
            for (String name : FILE_NAMES) {
                candidates.add(Path.of(dir, name));
            }
        }
        for (Path candidate : candidates) {
            if (Files.isRegularFile(candidate)) {
                return load(candidate);
            }
        }
        return new NotFound(dirs.stream().map(d -> d + "/libcudart.so*").toList());
    }

    /** Loads the library at {@code path}. Never throws. */
    public static synchronized Outcome load(Path path) {
        Path absolute = path.toAbsolutePath().normalize();
        if (!Files.isRegularFile(absolute)) {
            return new NotFound(List.of(absolute.toString()));
        }
        Path real;
        try {
            real = absolute.toRealPath();
        } catch (IOException e) {
            return new NotLoadable(absolute, e.toString());
        }
        if (loadedPath != null) {
            return loadedPath.equals(real) ? verify(real) : new Conflict(absolute, loadedPath);
        }
        try {
            System.load(real.toString());
        } catch (UnsatisfiedLinkError | SecurityException e) {
            return new NotLoadable(absolute, e.getMessage());
        }
        loadedPath = real;
        return verify(real);
    }

    /** The library bound in this process, if any. */
    public static synchronized Optional<Path> loaded() {
        return Optional.ofNullable(loadedPath);
    }

    private static Outcome verify(Path path) {
        SymbolLookup lookup = SymbolLookup.loaderLookup();
        List<String> missing = REQUIRED_SYMBOLS.stream().filter(s -> lookup.find(s).isEmpty()).toList();
        return missing.isEmpty() ? new Loaded(path) : new Incompatible(path, missing);
    }
}

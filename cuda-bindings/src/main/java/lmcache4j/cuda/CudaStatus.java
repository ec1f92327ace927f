package lmcache4j.cuda;

import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;

/** Whether the CUDA runtime can be used here, and if not, why not. */
public sealed interface CudaStatus permits CudaStatus.Available, CudaStatus.Unavailable {

    /** Why CUDA is unavailable. */
    enum Reason {
        /** No {@code libcudart} at any place looked at. */
        LIBRARY_NOT_FOUND("not found"),
        /** A {@code libcudart} file was found but could not be loaded or lacks needed symbols. */
        LIBRARY_UNUSABLE("library unusable"),
        /** The process already bound a different {@code libcudart}. */
        LIBRARY_CONFLICT("another libcudart is loaded"),
        /** The runtime loaded, but the driver is missing or older than the runtime. */
        DRIVER_MISSING("driver missing or too old"),
        /** Runtime and driver work but see no device. */
        NO_DEVICE("no device"),
        /** Device enumeration failed with another error. */
        INITIALIZATION_FAILED("initialisation failed");

        private final String words;

        Reason(String words) {
            this.words = words;
        }

        /** The reason in a few words. */
        public String words() {
            return words;
        }
    }

    /**
     * The runtime is loaded and sees at least one device.
     *
     * @param library        the loaded library file
     * @param runtimeVersion {@code cudaRuntimeGetVersion}, for example 13000
     * @param driverVersion  {@code cudaDriverGetVersion}
     * @param deviceCount    devices visible to this process
     */
    record Available(Path library, int runtimeVersion, int driverVersion, int deviceCount) implements CudaStatus {
        @Override
        public String toString() {
            return "available: " + deviceCount + " device(s), runtime " + CudaRuntime.versionString(runtimeVersion)
                    + ", driver " + CudaRuntime.versionString(driverVersion) + ", " + library;
        }
    }

    /**
     * The runtime cannot run device work here.
     *
     * @param reason         the kind of failure
     * @param detail         what was seen: the error decoded by the runtime, the loader's message,
     *                       or the places looked at
     * @param error          the runtime error behind it, when a call returned one
     * @param library        the library file, when one was loaded
     * @param runtimeVersion the runtime's version, when the library loaded
     */
    record Unavailable(Reason reason, String detail, Optional<CudaError> error, Optional<Path> library,
                       OptionalInt runtimeVersion) implements CudaStatus {
        @Override
        public String toString() {
            return "unavailable: " + error.map(e -> e.name() + ": " + e.message()).orElse(reason.words() + ": " + detail);
        }
    }

    /** Whether device work can run. */
    default boolean isAvailable() {
        return this instanceof Available;
    }
}

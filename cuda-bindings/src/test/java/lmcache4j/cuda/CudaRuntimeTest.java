package lmcache4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import lmcache4j.cuda.internal.cudart.cudart_h;
import lmcache4j.cuda.posix.AnonymousMapping;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs against the real libcudart installed on the machine. On the development and CI machines
 * there is a CUDA 13 toolkit but no driver, so every call that needs the driver answers
 * {@code cudaErrorInsufficientDriver}; on a GPU machine the same tests check the available path.
 */
class CudaRuntimeTest {
    private final CudaRuntime runtime = CudaRuntime.load();

    @Test
    void theInstalledRuntimeLoadsAndReportsItsVersion() {
        assertTrue(runtime.isLoaded(), () -> "libcudart did not load: " + runtime.status());
        assertEquals(cudart_h.CUDART_VERSION(), runtime.runtimeVersion().orElseThrow(),
                "cudaRuntimeGetVersion must match the CUDART_VERSION of the headers the bindings were generated from");
    }

    @Test
    void withoutADriverTheRuntimeIsUnavailableWithTheDecodedError() {
        if (runtime.driverVersion() > 0) {
            // A GPU machine: the driver answered, so the runtime must be available or see no device.
            assertTrue(runtime.isAvailable() || runtime.status() instanceof CudaStatus.Unavailable u
                    && u.reason() == CudaStatus.Reason.NO_DEVICE, runtime.status()::toString);
            return;
        }
        CudaStatus.Unavailable status = assertInstanceOf(CudaStatus.Unavailable.class, runtime.status());
        assertEquals(CudaStatus.Reason.DRIVER_MISSING, status.reason());
        CudaError error = status.error().orElseThrow();
        assertEquals(35, error.code());
        assertEquals("cudaErrorInsufficientDriver", error.name());
        assertEquals("CUDA driver version is insufficient for CUDA runtime version", error.message());
        assertEquals("unavailable: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
                status.toString());
    }

    @Test
    void callsThatNeedTheDriverThrowTheRuntimesError() {
        if (runtime.isAvailable()) {
            assertTrue(runtime.deviceCount() > 0);
            return;
        }
        CudaException count = assertThrows(CudaException.class, runtime::deviceCount);
        assertEquals(CudaError.INSUFFICIENT_DRIVER, count.code());
        assertEquals("cudaGetDeviceCount()", count.call());
        CudaException malloc = assertThrows(CudaException.class, () -> runtime.allocateDevice(1 << 20));
        assertEquals(CudaError.INSUFFICIENT_DRIVER, malloc.code());
        assertTrue(malloc.getMessage().startsWith("cudaMalloc(1048576) failed: cudaErrorInsufficientDriver (35)"),
                malloc.getMessage());
        assertThrows(CudaException.class, () -> runtime.allocatePinned(4096, HostAllocFlags.PORTABLE));
        assertThrows(CudaException.class, () -> runtime.createStream(true));
    }

    @Test
    void aFailedHostRegistrationNamesThePieceAndLeavesNothingRegistered() {
        if (runtime.isAvailable()) {
            return; // registration succeeds there: cuda-check's host-registration step proves it
        }
        try (AnonymousMapping mapping = AnonymousMapping.map(1 << 20, false, false)) {
            CudaException e = assertThrows(CudaException.class,
                    () -> runtime.registerHost(mapping.segment(), HostRegisterFlags.DEFAULT, 256 << 10));
            assertEquals(CudaError.INSUFFICIENT_DRIVER, e.code());
            assertTrue(e.call().contains("[piece 1 of 4]"), e.call());
        }
    }

    @Test
    void errorCodesAreDecodedByTheRuntime() {
        assertEquals("cudaErrorMemoryAllocation", runtime.error(CudaError.MEMORY_ALLOCATION).name());
        assertEquals("cudaErrorNoDevice", runtime.error(CudaError.NO_DEVICE).name());
        assertEquals("cudaSuccess", runtime.error(CudaError.SUCCESS).name());
    }

    @Test
    void aLibraryThatDoesNotExistIsReportedWithoutAnException() {
        CudaRuntime missing = CudaRuntime.load(Path.of("/nonexistent/lib/libcudart.so"));
        assertFalse(missing.isAvailable());
        assertFalse(missing.isLoaded());
        CudaStatus.Unavailable status = assertInstanceOf(CudaStatus.Unavailable.class, missing.status());
        assertEquals(CudaStatus.Reason.LIBRARY_NOT_FOUND, status.reason());
        assertTrue(status.toString().startsWith("unavailable: not found: "), status.toString());
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> missing.allocateDevice(1));
        assertTrue(e.getMessage().contains("not found"), e.getMessage());
    }

    @Test
    void aFileThatIsNotTheLoadedLibraryIsRefused(@TempDir Path dir) throws IOException {
        Path garbage = Files.writeString(dir.resolve("libcudart.so"), "not an ELF file");
        CudaStatus.Unavailable status = assertInstanceOf(CudaStatus.Unavailable.class, CudaRuntime.load(garbage).status());
        // The process already bound the real runtime, so a second, different library is a conflict.
        assertEquals(CudaStatus.Reason.LIBRARY_CONFLICT, status.reason());
    }

    @Test
    void theConstantsOfThePublicApiAreTheHeaders() {
        assertEquals(cudart_h.cudaSuccess(), CudaError.SUCCESS);
        assertEquals(cudart_h.cudaErrorInvalidValue(), CudaError.INVALID_VALUE);
        assertEquals(cudart_h.cudaErrorMemoryAllocation(), CudaError.MEMORY_ALLOCATION);
        assertEquals(cudart_h.cudaErrorInsufficientDriver(), CudaError.INSUFFICIENT_DRIVER);
        assertEquals(cudart_h.cudaErrorNoDevice(), CudaError.NO_DEVICE);
        assertEquals(cudart_h.cudaErrorHostMemoryAlreadyRegistered(), CudaError.HOST_MEMORY_ALREADY_REGISTERED);
        assertEquals(cudart_h.cudaErrorHostMemoryNotRegistered(), CudaError.HOST_MEMORY_NOT_REGISTERED);
        assertEquals(cudart_h.CUDA_IPC_HANDLE_SIZE(), IpcMemHandle.SIZE);
    }

    @Test
    void largeRegistrationsAreSplitIntoPiecesOfAtMost64GiB() {
        long size = 130L << 30;
        var pieces = HostRegistration.split(MemorySegment.ofAddress(1L << 40).reinterpret(size), CudaRuntime.MAX_REGISTRATION_BYTES);
        assertEquals(3, pieces.size());
        assertEquals(64L << 30, pieces.get(0).byteSize());
        assertEquals(64L << 30, pieces.get(1).byteSize());
        assertEquals(2L << 30, pieces.get(2).byteSize());
        assertEquals((1L << 40) + (128L << 30), pieces.get(2).address());
    }

    @Test
    void ipcHandlesAreValuesOf64Bytes() {
        byte[] raw = new byte[64];
        raw[0] = 7;
        IpcMemHandle handle = new IpcMemHandle(raw);
        raw[0] = 9;
        assertEquals(7, handle.bytes()[0], "the handle copies its bytes in");
        assertEquals(handle, new IpcMemHandle(handle.bytes()));
        assertThrows(IllegalArgumentException.class, () -> new IpcMemHandle(new byte[63]));
    }

    @Test
    void badArgumentsAreRejectedBeforeAnyCall() {
        assertThrows(IllegalArgumentException.class, () -> runtime.allocateDevice(0));
        assertThrows(IllegalArgumentException.class, () -> runtime.allocatePinned(-1, 0));
        assertThrows(IllegalArgumentException.class, () -> runtime.registerHost(MemorySegment.ofArray(new byte[16]), 0));
    }
}

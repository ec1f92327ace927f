package lmcache4j.bench.gpu;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.DeviceBuffer;
import lmcache4j.cuda.HostAllocFlags;
import lmcache4j.cuda.IpcMapping;
import lmcache4j.cuda.IpcMemHandle;
import lmcache4j.cuda.MemcpyKind;
import lmcache4j.cuda.PinnedHostBuffer;

/**
 * The second process of {@link CudaCheck}'s IPC step: maps a device buffer another process exported
 * ({@code cudaIpcOpenMemHandle}), copies it to the host, prints its CRC32C, then overwrites its first
 * bytes so the exporter can see the write. Run as
 * {@code java -m lmcache4j.bench/lmcache4j.bench.gpu.IpcPeer <handle hex> <bytes>}.
 */
public final class IpcPeer {
    private static final int TIMEOUT_SECONDS = 60;
    static final byte[] MARK = "written by the IPC peer".getBytes(StandardCharsets.US_ASCII);

    private IpcPeer() {
    }

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: IpcPeer <64-byte handle as hex> <bytes>");
            System.exit(2);
        }
        CudaRuntime cuda = CudaRuntime.load();
        if (!cuda.isAvailable()) {
            System.err.println("cuda " + cuda.status());
            System.exit(3);
        }
        IpcMemHandle handle = new IpcMemHandle(HexFormat.of().parseHex(args[0]));
        long bytes = Long.parseLong(args[1]);
        try (IpcMapping mapping = cuda.openIpcHandle(handle);
             PinnedHostBuffer host = cuda.allocatePinned(bytes, HostAllocFlags.PORTABLE)) {
            cuda.memcpy(host.segment(), mapping.pointer(), bytes, MemcpyKind.DEVICE_TO_HOST);
            System.out.println("crc32c " + crc(host.segment()));
            MemorySegment mark = MemorySegment.ofArray(MARK);
            host.segment().copyFrom(mark);
            cuda.memcpy(mapping.pointer(), host.segment(), MARK.length, MemcpyKind.HOST_TO_DEVICE);
            cuda.deviceSynchronize();
        }
    }

    /**
     * Exports a device buffer of known bytes, has a second JVM open it, and checks both directions:
     * the peer read the same bytes (CRC32C) and its write reached this process's buffer.
     */
    static String check(CudaRuntime cuda) {
        long bytes = 8 * CudaCheck.MIB;
        try (DeviceBuffer device = cuda.allocateDevice(bytes);
             PinnedHostBuffer host = cuda.allocatePinned(bytes, HostAllocFlags.PORTABLE)) {
            CudaCheck.fillRandom(host.segment(), 6);
            long expected = crc(host.segment());
            cuda.memcpy(device.pointer(), host.segment(), bytes, MemcpyKind.HOST_TO_DEVICE);
            IpcMemHandle handle = cuda.ipcHandle(device);
            String output = runPeer(HexFormat.of().formatHex(handle.bytes()), bytes);
            CudaCheck.require(output.contains("crc32c " + expected), "the peer read other bytes: " + output.strip()
                    + " (expected crc32c " + expected + ")");
            cuda.memcpy(host.segment(), device.pointer(), MARK.length, MemcpyKind.DEVICE_TO_HOST);
            CudaCheck.require(host.segment().asSlice(0, MARK.length).mismatch(MemorySegment.ofArray(MARK)) == -1,
                    "the peer's write did not reach the exporting process");
            return "a second JVM opened the 8 MiB buffer's handle, read crc32c " + expected + ", and its write came back";
        }
    }

    private static String runPeer(String handleHex, long bytes) {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow(() -> new AssertionError("no java command")));
        command.add("--enable-native-access=lmcache4j.cuda");
        String modulePath = System.getProperty("jdk.module.path");
        CudaCheck.require(modulePath != null, "the IPC peer needs the module path (run on the module path)");
        command.addAll(List.of("--module-path", modulePath, "-m", "lmcache4j.bench/" + IpcPeer.class.getName(),
                handleHex, Long.toString(bytes)));
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the IPC peer did not finish in " + TIMEOUT_SECONDS + " s");
            }
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            CudaCheck.require(process.exitValue() == 0, "the IPC peer exited " + process.exitValue() + ": " + output.strip());
            return output;
        } catch (IOException e) {
            throw new AssertionError("could not start the IPC peer: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for the IPC peer", e);
        }
    }

    static long crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asByteBuffer());
        return crc.getValue();
    }
}

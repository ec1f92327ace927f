package lmcache4j.cli;

import java.nio.file.Files;
import java.nio.file.Path;

import lmcache4j.bench.trace.Trace;
import lmcache4j.bench.trace.TraceFile;

/** The {@code --trace FILE} and {@code --block-tokens N} options {@code bench trace} and {@code plan} share. */
final class TraceInput {
    private Path path;
    private int blockTokens = TraceFile.MOONCAKE_BLOCK_TOKENS;

    void path(String value) {
        Path p = Path.of(value);
        if (!Files.isRegularFile(p)) {
            throw new IllegalArgumentException("--trace '" + CliText.echo(value) + "' is not a file");
        }
        path = p;
    }

    void blockTokens(int value) {
        blockTokens = value;
    }

    /** The trace: the file given, else the bundled one. A malformed line is an IllegalArgumentException naming it. */
    Trace read() {
        if (path == null) {
            if (blockTokens != TraceFile.MOONCAKE_BLOCK_TOKENS) {
                throw new IllegalArgumentException("--block-tokens applies to a --trace file; the bundled trace has blocks of "
                        + TraceFile.MOONCAKE_BLOCK_TOKENS + " tokens");
            }
            return TraceFile.bundled();
        }
        return TraceFile.read(path, blockTokens);
    }
}

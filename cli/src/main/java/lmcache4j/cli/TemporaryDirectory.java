package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A temporary directory a command makes (a demo's disk tier, a model's scratch space) and must not
 * leave behind however the process ends: {@link #close} deletes it, and a stop before that
 * (SIGTERM, Ctrl-C) runs a shutdown hook that interrupts the command's thread (a hold ends, a wait
 * gives up), gives the command {@value #GRACE_MILLIS} ms to close what writes into the directory and
 * then close this, and otherwise deletes what is there itself. A JVM shutdown does not wait for the
 * command's own {@code finally}: without the hook a stopped demo left gigabytes of chunk files.
 */
final class TemporaryDirectory implements AutoCloseable {
    static final long GRACE_MILLIS = 10_000;
    private static final int DELETE_PASSES = 20;

    private final Path path;
    private final PrintStream err;
    private final String who;
    private final Thread hook;
    private final CountDownLatch closed = new CountDownLatch(1);
    private boolean deleted;

    private TemporaryDirectory(Path path, PrintStream err, String who, Thread owner) {
        this.path = path;
        this.err = err;
        this.who = who;
        this.hook = new Thread(() -> onShutdown(owner), "lmcache4j-cleanup");
    }

    /**
     * Creates a directory named {@code prefix…} in {@code java.io.tmpdir}, to be deleted with everything
     * in it on close or when the process is stopped; {@code who} names the command in messages on {@code err}.
     */
    static TemporaryDirectory create(String prefix, PrintStream err, String who) throws IOException {
        TemporaryDirectory dir = new TemporaryDirectory(Files.createTempDirectory(prefix), err, who, Thread.currentThread());
        Runtime.getRuntime().addShutdownHook(dir.hook);
        return dir;
    }

    Path path() {
        return path;
    }

    /** Deletes the directory tree (once; what it cannot delete it names on {@code err}). */
    @Override
    public void close() {
        delete();
        closed.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs, finds this closed and returns
        }
    }

    private void onShutdown(Thread owner) {
        owner.interrupt();
        try {
            if (closed.await(GRACE_MILLIS, TimeUnit.MILLISECONDS)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        delete(); // the command did not finish in time: its writers stop with the JVM, a late write fails on the gone directory
    }

    private synchronized void delete() {
        if (deleted) {
            return;
        }
        deleted = true;
        deleteTree(path, err, who);
    }

    /**
     * Deletes {@code dir} and everything in it, symlinks as links (never followed); a file that
     * vanishes meanwhile is fine, and a writer still adding files (a stop that came mid-run) is
     * outlasted by a few passes. Says on {@code err} (as {@code who}) when it cannot.
     */
    static void deleteTree(Path dir, PrintStream err, String who) {
        IOException last = null;
        for (int pass = 0; pass < DELETE_PASSES; pass++) {
            try {
                Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                        Files.deleteIfExists(file);
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                        if (e instanceof NoSuchFileException) {
                            return FileVisitResult.CONTINUE;
                        }
                        throw e;
                    }

                    @Override
                    public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                        if (e != null && !(e instanceof NoSuchFileException)) {
                            throw e;
                        }
                        Files.deleteIfExists(d);
                        return FileVisitResult.CONTINUE;
                    }
                });
                return;
            } catch (NoSuchFileException e) {
                return; // already gone
            } catch (IOException e) {
                last = e; // most likely a file written after its directory was listed: again
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        err.println(who + ": could not delete the temporary directory " + dir + ": " + last);
    }
}

package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.storage.TestChunks;

/**
 * The chunk directory as an attacker or a careless user leaves it: files the cache did not write
 * (with or without its suffix, named like its temp files, holding garbage), directories, symlinks
 * to files outside. The cache deletes, overwrites and follows none of them.
 */
class ChunkDirectoryOwnershipTest {
    /** The marker file's name: part of the on-disk contract. */
    private static final String MARKER = ".lmcache4j-chunks";
    private static final String FIRST_LINE_OF_MARKER = "lmcache4j chunk directory";

    @TempDir
    Path dir;
    @TempDir
    Path outside;

    @RegisterExtension
    final TrackedChunks chunks = new TrackedChunks(8L << 20);

    private MemoryObj chunk(long seed) {
        return chunks.chunk(DiskTestChunks.TINY, seed);
    }

    private static byte[] garbage(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** A cache directory in use, then foreign entries of every kind dropped into it. */
    @Test
    void foreign_entries_survive_recovery_untouched() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunk(1));
        Path precious = Files.writeString(outside.resolve("precious.txt"), "not the cache's");
        List<Path> foreign = List.of(
                Files.writeString(dir.resolve("thesis.txt"), "four years of work"),
                Files.write(dir.resolve("data.bin"), garbage(10_000, 1)),
                Files.write(dir.resolve("garbage.lmc"), garbage(8192, 2)), // our suffix, not our magic
                Files.write(dir.resolve("zeros.lmc"), new byte[8192]),
                Files.writeString(dir.resolve("notes.lmc.tmp-12-34"), "named like a temp file, written by a person"),
                Files.createDirectory(dir.resolve("sub.lmc")),
                Files.createSymbolicLink(dir.resolve("link.lmc"), precious),
                Files.createSymbolicLink(dir.resolve("link.lmc.tmp-1-2"), precious),
                Files.createSymbolicLink(dir.resolve("dangling.lmc"), outside.resolve("nothing-here")));
        List<byte[]> before = new ArrayList<>();
        for (Path p : foreign) {
            before.add(Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) ? Files.readAllBytes(p) : null);
        }

        RecoveryReport r = new ChunkFiles(dir, false, false).recover();

        assertEquals(1, r.chunks().size());
        assertEquals(0, r.removedPartial() + r.removedCorrupt());
        assertEquals(foreign.size(), r.foreign(), "counted");
        assertTrue(r.foreignSummary().startsWith(foreign.size() + " entries that are not lmcache4j chunk files were left "
                + "alone ("), r.foreignSummary());
        assertEquals(RecoveryReport.MAX_EXAMPLES, r.foreignExamples().size());
        for (int i = 0; i < foreign.size(); i++) {
            Path p = foreign.get(i);
            assertTrue(Files.exists(p, LinkOption.NOFOLLOW_LINKS), p + " was deleted");
            if (before.get(i) != null) {
                assertArrayEquals(before.get(i), Files.readAllBytes(p), p + " was changed");
            }
        }
        assertTrue(Files.isSymbolicLink(dir.resolve("link.lmc")));
        assertEquals("not the cache's", Files.readString(precious));
    }

    @Test
    void temp_files_are_removed_only_when_they_hold_what_the_cache_writes() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunk(1));
        String stem = files.pathFor(TestChunks.key(2)).getFileName().toString();
        Path killedMidWrite = Files.write(dir.resolve(stem + ".tmp-7-1"),
                java.util.Arrays.copyOf(Files.readAllBytes(files.pathFor(TestChunks.key(1))), 5000));
        Path killedBeforeWrite = Files.write(dir.resolve(stem + ".tmp-7-2"), new byte[0]);
        Path personal = Files.writeString(dir.resolve(stem + ".tmp-7-3"), "a person's file under a temp-like name");
        Path notOurPattern = Files.write(dir.resolve(stem + ".tmp-x"), new byte[0]);

        RecoveryReport r = new ChunkFiles(dir, false, false).recover();

        assertEquals(2, r.removedPartial());
        assertFalse(Files.exists(killedMidWrite));
        assertFalse(Files.exists(killedBeforeWrite));
        assertTrue(Files.exists(personal));
        assertTrue(Files.exists(notOurPattern));
    }

    @Test
    void a_symlink_named_like_a_chunk_file_is_neither_followed_nor_deleted_nor_replaced() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        // The link points at a valid chunk file of the same key outside: following it would serve it.
        Path elsewhere = new ChunkFiles(outside, false, false).pathFor(TestChunks.key(1));
        new ChunkFiles(outside, false, false).write(TestChunks.key(1), chunk(1));
        byte[] original = Files.readAllBytes(elsewhere);
        Path link = Files.createSymbolicLink(files.pathFor(TestChunks.key(1)), elsewhere);

        RecoveryReport r = files.recover();
        assertEquals(List.of(), r.chunks(), "a link is not recovered as a chunk");
        assertTrue(Files.isSymbolicLink(link), "nor deleted");

        IOException e = assertThrows(IOException.class, () -> files.write(TestChunks.key(1), chunk(2)));
        assertTrue(e.getMessage().contains(link.toString()), e.getMessage());
        assertTrue(Files.isSymbolicLink(link), "a write does not replace it");
        files.delete(link);
        assertTrue(Files.isSymbolicLink(link), "delete leaves what is not a chunk file alone");
        assertArrayEquals(original, Files.readAllBytes(elsewhere), "the file outside is untouched");
        try (var s = Files.list(dir)) {
            assertTrue(s.noneMatch(p -> ChunkFileNames.isTemp(p.getFileName().toString())), "no temp file left");
        }
    }

    @Test
    void a_symlink_planted_at_the_temp_name_is_not_followed() throws Exception {
        Path precious = Files.writeString(outside.resolve("precious.txt"), "must survive");
        ChunkFiles files = new ChunkFiles(dir, false, false, target -> target.resolveSibling(target.getFileName() + ".tmp-1-1"));
        Path temp = dir.resolve(files.pathFor(TestChunks.key(1)).getFileName() + ".tmp-1-1");
        Files.createSymbolicLink(temp, precious);

        IOException e = assertThrows(IOException.class, () -> files.write(TestChunks.key(1), chunk(1)));
        assertTrue(e.getMessage().contains(temp.toString()), e.getMessage());
        assertEquals("must survive", Files.readString(precious), "the write did not go through the link");
        assertTrue(Files.isSymbolicLink(temp), "and the link, which the cache did not make, is left");
        assertFalse(Files.exists(files.pathFor(TestChunks.key(1)), LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void a_non_empty_directory_without_the_marker_is_refused() throws Exception {
        Path thesis = Files.writeString(dir.resolve("thesis.txt"), "four years of work");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> new ChunkFiles(dir, false, false));
        String msg = e.getMessage();
        assertTrue(msg.contains(dir.toString()) && msg.contains("thesis.txt") && msg.contains("local_disk.claim_nonempty_dir"),
                msg);
        assertEquals("four years of work", Files.readString(thesis));
        assertFalse(Files.exists(dir.resolve(MARKER)), "nothing was claimed");
    }

    @Test
    void the_knob_claims_a_non_empty_directory_and_still_deletes_nothing_in_it() throws Exception {
        Path thesis = Files.writeString(dir.resolve("thesis.txt"), "four years of work");
        Path tmpLike = Files.writeString(dir.resolve("draft.lmc.tmp-1-1"), "a person's draft");
        ChunkFiles files = new ChunkFiles(dir, false, false, true);
        assertTrue(Files.isRegularFile(dir.resolve(MARKER)));
        files.write(TestChunks.key(1), chunk(1));
        RecoveryReport r = new ChunkFiles(dir, false, false).recover(); // claimed: no knob needed any more
        assertEquals(1, r.chunks().size());
        assertEquals(2, r.foreign());
        files.delete(thesis);
        files.delete(tmpLike);
        assertEquals("four years of work", Files.readString(thesis));
        assertEquals("a person's draft", Files.readString(tmpLike));
    }

    @Test
    void a_marker_the_cache_did_not_write_is_refused() throws Exception {
        Path decoy = Files.writeString(outside.resolve("decoy"), FIRST_LINE_OF_MARKER + "\n");
        Files.createSymbolicLink(dir.resolve(MARKER), decoy);
        IllegalStateException link = assertThrows(IllegalStateException.class, () -> new ChunkFiles(dir, false, false));
        assertTrue(link.getMessage().contains("not a regular file"), link.getMessage());

        Files.delete(dir.resolve(MARKER));
        Files.writeString(dir.resolve(MARKER), "something else\n");
        IllegalStateException text = assertThrows(IllegalStateException.class, () -> new ChunkFiles(dir, false, false, true));
        assertTrue(text.getMessage().contains("did not write it"), text.getMessage());
    }

    @Test
    void a_new_or_empty_directory_is_claimed_with_a_marker() throws Exception {
        Path fresh = outside.resolve("new/cache");
        new ChunkFiles(fresh, false, false);
        new ChunkFiles(dir, false, false);
        for (Path d : List.of(fresh, dir)) {
            Path marker = d.resolve(MARKER);
            assertTrue(Files.isRegularFile(marker, LinkOption.NOFOLLOW_LINKS), marker.toString());
            assertTrue(Files.readString(marker, StandardCharsets.UTF_8).startsWith(FIRST_LINE_OF_MARKER + "\n"));
        }
        // a claimed directory reopens, whatever else lands in it later
        Files.writeString(dir.resolve("later.txt"), "x");
        new ChunkFiles(dir, false, false).recover();
        assertTrue(Files.exists(dir.resolve("later.txt")));
    }

    @Test
    void a_directory_holding_only_chunk_files_is_claimed_as_the_caches_own() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunk(1));
        Files.delete(dir.resolve(MARKER)); // as an lmcache4j from before the marker left it
        assertEquals(1, new ChunkFiles(dir, false, false).recover().chunks().size());
        assertTrue(Files.exists(dir.resolve(MARKER)));
    }
    /** Files named like chunk files do not make a directory the cache's: their magic does. */
    @Test
    void a_non_empty_directory_of_lmc_files_with_another_magic_is_refused() throws Exception {
        Path lookalike = Files.write(dir.resolve(ChunkFileNames.fileName(TestChunks.key(1).toKeyString())),
                "not a chunk, just named like one".getBytes(StandardCharsets.UTF_8));
        Path other = Files.write(dir.resolve("report.lmc"), new byte[8192]);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> new ChunkFiles(dir, false, false));
        assertTrue(e.getMessage().contains("local_disk.claim_nonempty_dir"), e.getMessage());
        assertFalse(Files.exists(dir.resolve(MARKER)), "nothing was claimed");
        assertEquals("not a chunk, just named like one", Files.readString(lookalike));
        assertArrayEquals(new byte[8192], Files.readAllBytes(other));
    }
}

package lmcache4j.bench.demo;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.bench.json.ReportJson;
import lmcache4j.engine.remote.RemoteHealth;

/**
 * What a demo run did and measured, as a readable report ({@link #text()}) or one JSON object
 * ({@link #json()}). Bandwidths are in GB/s (10⁹ bytes per second).
 *
 * @param storeCopyGbps    the engine's store bandwidth from its metrics: bytes the connector copied ÷ time spent copying
 * @param retrieveCopyGbps the same for retrieves
 * @param storeSteadyGbps  {@code storeCopyGbps} from the first eviction on, when the CPU tier's memory has all been
 *                         written once (the first write of each page pays a page fault); NaN without evictions
 * @param tierFullAt       the request after which the tier first evicted, or -1
 * @param storeE2eGbps     bytes of the newly stored chunks ÷ wall time of the {@code store} calls (hashing,
 *                         allocation, eviction, planning and bookkeeping included)
 * @param retrieveE2eGbps  bytes retrieved ÷ wall time of the {@code retrieve} calls
 * @param memcpyChunk      memcpy in chunk-sized pieces, same total bytes as the stores
 * @param memcpyBlock      memcpy in pieces of one paged block of one layer and plane: the runs the connector copies
 * @param disagreements    retrieves that loaded fewer tokens than their pinned lookup found (an engine error)
 * @param shortfallTokens  the tokens those retrieves fell short by, in all
 * @param maskHoles        retrieves whose returned mask had a loaded token after one that was not
 * @param engineHealthy    whether the engine's health check (allocator invariants) passed at the end
 * @param retrievesBeyondLookup retrieves that loaded more: a chunk whose disk write was still queued at the lookup
 *                         reached the disk before the retrieve (not an error; its bytes are verified too)
 * @param problems         details of what went wrong, per request (at most 20)
 * @param disk             the disk tier's counters after its queued writes finished, or null without a disk tier
 * @param remote           the remote tier's counters after its puts finished, or null without a remote tier
 * @param controller       the cache-controller link's counters after its reports drained, or null without one
 */
public record DemoReport(ServingSimulator.Settings settings, int conversations, long sharedTokens, int pagedBlocks,
                         long pagedBytes, long cpuBytes, long cpuChunks, Map<Workload.Kind, Integer> kinds,
                         long promptTokens, long reusedTokens, long computedTokens, long storedTokens,
                         long lookupHitTokens, int requestsWithHit, int disagreements, long shortfallTokens,
                         int maskHoles, boolean engineHealthy, int retrievesBeyondLookup, long verifiedBytes,
                         long mismatchingBytes, List<String> problems,
                         double storeCopyGbps, double retrieveCopyGbps, double storeSteadyGbps, int tierFullAt,
                         double storeE2eGbps, double retrieveE2eGbps, long storedBytes, long retrievedBytes,
                         MemcpyBaseline.Result memcpyChunk, MemcpyBaseline.Result memcpyBlock,
                         long evictions, long evictionFailures, long cachedChunks, long cacheUsedBytes,
                         double engineRetrieveHitRate, Phases phases, Disk disk, Remote remote,
                         Controller controller) {

    /**
     * The engine's link to a cache controller ({@link lmcache4j.engine.controller.ControllerWorker}'s counters).
     *
     * @param controllerAddress the controller's pull and reply addresses, as given
     * @param instanceId        the instance id the engine registered as
     * @param registered        whether the controller acknowledged the registration
     * @param opsReported       admits and evictions pushed to the controller
     * @param opsDropped        reports dropped because the bounded queue was full (a full sync follows)
     * @param fullSyncs         full syncs of every key held
     * @param secured           whether this engine had a deployment secret (CURVE); a secured controller
     *                          drops the handshake of an engine without it, or with another, without a word
     */
    public record Controller(String controllerAddress, String instanceId, boolean registered, long opsReported,
                             long opsDropped, long fullSyncs, boolean secured) {
        /** Why the link failed its purpose, and what to check, in one sentence. */
        public String failure() {
            return "the cache controller at " + controllerAddress + " never acknowledged the registration of instance "
                    + instanceId + ", so nothing this run cached can be found through it. Is it running there, "
                    + (secured ? "with --secret-file naming the same secret as this engine's --secret-file (a controller "
                            + "with another secret, or --insecure, drops the handshake)?"
                            : "and with --insecure? A controller started with --secret-file refuses an engine without the "
                            + "secret: pass the same file here (demo --secret-file FILE; engines: deployment_secret_file)");
        }
    }

    /**
     * The remote tier ({@link lmcache4j.engine.remote.RemoteBackend}'s stats).
     *
     * @param puts        chunks the remote store acknowledged (for {@code lm://}, confirmed by a round trip)
     * @param failedPuts  puts the connector reported failed
     * @param droppedPuts puts never sent: the health ping had failed and a blackhole stood in
     * @param gets        chunks read from it (retrieve hits no local tier held: for example another process's)
     * @param failedReads gets and lookups that timed out or failed (each a miss)
     * @param health      what the store's answers, or their absence, say
     */
    public record Remote(String url, long puts, long putBytes, long failedPuts, long droppedPuts, long gets,
                         long getBytes, long failedReads, RemoteHealth health) {

        /** Puts this run asked of the tier. */
        public long attemptedPuts() {
            return puts + failedPuts + droppedPuts;
        }

        /** The store was asked to keep chunks (or failed when asked anything) but kept none and served none. */
        public boolean storedNothing() {
            return puts == 0 && gets == 0 && (attemptedPuts() > 0 || health.failures() > 0);
        }

        /** No operation ever succeeded against the store and it is not answering at the end. */
        public boolean neverAnswered() {
            return !health.everSucceeded() && health.state() != RemoteHealth.State.HEALTHY;
        }

        /** Whether {@code --remote} failed its purpose: a store that kept nothing, or never answered. */
        public boolean failed() {
            return storedNothing() || neverAnswered();
        }

        /** Why {@link #failed()}, in one sentence. */
        public String failure() {
            return String.format(Locale.ROOT, "the remote %s %s: %,d of %,d puts stored and %,d chunks read back",
                    url, neverAnswered() ? "was unreachable for the whole run (" + health.lastError() + ")"
                            : "stored nothing (" + health.describe() + ")", puts, attemptedPuts(), gets);
        }
    }

    /** Where the time went, in nanoseconds; {@code diskDrain}: waiting for the disk tier's queued writes after serving. */
    public record Phases(long lookup, long poison, long retrieve, long verify, long compute, long store, long wall,
                         long memcpy, long diskDrain) {
    }

    /**
     * The disk tier ({@link lmcache4j.engine.storage.disk.LocalDiskBackend}'s stats).
     *
     * @param recoveredChunks chunk files an earlier run left in the directory, found valid at start
     * @param writes          chunk files written by this run
     * @param reads           chunks read back from disk (retrieve hits the CPU tier no longer held)
     * @param droppedPuts     stores that skipped the disk tier because its write queue was full
     * @param rejectedPuts    writes refused because nothing more could be evicted (all pinned)
     * @param chunks          chunk files on disk at the end
     * @param usedBytes       their bytes
     * @param corruptChunksDropped chunk files that failed their checksum when read and were dropped (each a
     *                        miss, recomputed: never served as KV)
     * @param corruptRemovedAtStart chunk files of an earlier run that failed their checks at start (a
     *                        partial write, a forged or inconsistent header, a payload whose checksum no
     *                        longer matches) and were removed before any lookup could promise them
     * @param foreignEntries  entries in the directory that are not the cache's, left alone
     * @param foreignSummary  one line naming a few of them (empty when there are none)
     */
    public record Disk(Path directory, long capacityBytes, int recoveredChunks, long recoveredBytes, long writes,
                       long reads, long evictions, long droppedPuts, long rejectedPuts, long ioFailures,
                       long corruptChunksDropped, int chunks, long usedBytes, boolean directIo,
                       long corruptRemovedAtStart, int foreignEntries, String foreignSummary) {
    }

    /** What the run's result means, and the demo's exit status. */
    public DemoVerdict verdict() {
        return DemoVerdict.of(verifiedBytes, mismatchingBytes, disagreements, shortfallTokens, maskHoles, engineHealthy,
                remote, controller);
    }

    /** True when every retrieved byte was right, every retrieve agreed with its lookup and a given remote worked. */
    public boolean passed() {
        return verdict().passed();
    }

    /** Tokens retrieved ÷ prompt tokens. */
    public double hitRate() {
        return promptTokens == 0 ? 0 : reusedTokens / (double) promptTokens;
    }

    public int requests() {
        return settings.requests();
    }

    public double memcpyGbps() {
        return memcpyChunk.gbps();
    }

    /** Header lines printed before the run: the model, the cache, the workload. */
    public static String describe(ServingSimulator.Settings s, int pagedBlocks, long pagedBytes, String copies) {
        Workload.Shape w = s.workload();
        return String.format(Locale.ROOT, """
                model      %s: %d layers × %d KV heads × %d, %s; %s of KV per token, %d-token chunks of %s
                serving    paged KV cache in host memory (vLLM FlashAttention layout): %,d blocks of %d tokens (%s),
                           random block table per request; lookup (pinning) → retrieve → verify → compute the rest → store
                engine     CPU tier max_local_cpu_size %.2f GiB, LRU; %s
                copies     %s
                workload   %,d requests, seed %d: %d system prompts shared by up to %d conversations at once,
                           %d long documents queried repeatedly (popular ones more); requests up to %,d tokens""",
                s.metadata().modelName(), s.layers(), s.kvHeads(), s.headSize(), ServingSimulator.DTYPE.torchName(),
                HostArenas.formatBytes(s.bytesPerToken()), s.chunkSize(), HostArenas.formatBytes(s.chunkBytes()),
                pagedBlocks, s.blockSize(), HostArenas.formatBytes(pagedBytes),
                s.cpuGb(), s.hasDisk() ? String.format(Locale.ROOT, "disk tier max_local_disk_size %.2f GiB in%n           %s",
                        s.diskGb(), s.diskDir().toAbsolutePath()) : "no disk tier", copies, s.requests(), s.seed(), w.systemPrompts(), w.maxConversations(), w.documents(), w.maxTokens());
    }

    /** The readable report. */
    public String text() {
        StringBuilder sb = new StringBuilder();
        String mix = kinds.entrySet().stream().map(e -> String.format(Locale.ROOT, "%,d %s", e.getValue(), e.getKey().plural()))
                .collect(Collectors.joining(", "));
        Phases p = phases;
        sb.append("== result ==\n");
        line(sb, "requests", "%,d: %s (%,d conversations)", requests(), mix, conversations);
        line(sb, "prompts", "%,d prompt tokens, %,d tokens of KV computed (prompt remainders and answers)",
                promptTokens, computedTokens);
        line(sb, "reused", "%,d tokens retrieved instead of recomputed: hit rate %.1f%% of prompt tokens;",
                reusedTokens, 100 * hitRate());
        line(sb, "", "%,d of %,d requests found a cached prefix", requestsWithHit, requests());
        line(sb, "stored", "%,d new tokens (%,d chunks, %s); chunks already cached are skipped",
                storedTokens, storedTokens / settings.chunkSize(), HostArenas.formatBytes(storedBytes));
        line(sb, "verified", "%s of retrieved KV (%,d bytes), byte by byte against the model: %,d mismatching bytes",
                HostArenas.formatBytes(verifiedBytes), verifiedBytes, mismatchingBytes);
        if (disagreements != 0) {
            line(sb, "lookup", "%,d retrieves loaded fewer tokens than their pinned lookup found", disagreements);
        } else if (retrievesBeyondLookup == 0) {
            line(sb, "lookup", "every retrieve loaded exactly the tokens its pinned lookup found (%,d tokens)", lookupHitTokens);
        } else {
            line(sb, "lookup", "every retrieve loaded at least the tokens its pinned lookup found (%,d tokens); %,d loaded more:",
                    lookupHitTokens, retrievesBeyondLookup);
            line(sb, "", "chunks whose queued disk write finished between the lookup and the retrieve");
        }
        line(sb, "CPU tier", "%s (%,d chunks): %,d evictions; %,d chunks (%s) cached at the end",
                HostArenas.formatBytes(cpuBytes), cpuChunks, evictions, cachedChunks, HostArenas.formatBytes(cacheUsedBytes));
        tierLines(sb);
        sb.append("bandwidth  GB/s = 10^9 bytes/s; \"copy\" = engine metrics, bytes the connector copied / time in copies;\n");
        sb.append("           \"end to end\" = bytes / wall time of the store() or retrieve() calls; memcpy = MemorySegment.copy\n");
        sb.append("           in this process of as many bytes as the stores, between two touched off-heap buffers\n");
        line(sb, "  store", "%6.2f copy, %.2f end to end; %s", storeCopyGbps, storeE2eGbps,
                Double.isNaN(storeSteadyGbps) ? "no eviction: the tier never filled"
                        : String.format(Locale.ROOT, "%.2f copy after the tier first filled (request %d)",
                        storeSteadyGbps, tierFullAt));
        line(sb, "  retrieve", "%6.2f copy, %.2f end to end", retrieveCopyGbps, retrieveE2eGbps);
        line(sb, "  memcpy", "%6.2f in %s pieces (chunk-sized: the JDK copies pieces of 2.5 MiB or more with",
                memcpyChunk.gbps(), HostArenas.formatBytes(memcpyChunk.pieceBytes()));
        line(sb, "", "       non-temporal stores), %.2f in %s pieces (one block of one layer: the runs the connector",
                memcpyBlock.gbps(), HostArenas.formatBytes(memcpyBlock.pieceBytes()));
        line(sb, "", "       can copy, since consecutive blocks of a request are scattered in the paged cache)");
        line(sb, "  ratios", "store %.2f, retrieve %.2f of block-piece memcpy; %.2f and %.2f of chunk-piece memcpy%s",
                storeVsBlockMemcpy(), retrieveCopyGbps / memcpyBlock.gbps(), storeVsMemcpy(), retrieveCopyGbps / memcpyChunk.gbps(),
                Double.isNaN(storeSteadyGbps) ? "" : " (store: after the tier filled)");
        line(sb, "time", "%.1f s serving: model compute %.1f s, verify %.1f s, poison %.1f s, engine retrieve %.1f s,%n"
                        + "           store %.1f s, lookup %.2f s; then the memcpy baseline %.1f s (touching its buffers included)",
                p.wall() / 1e9, p.compute() / 1e9, p.verify() / 1e9, p.poison() / 1e9, p.retrieve() / 1e9,
                p.store() / 1e9, p.lookup() / 1e9, p.memcpy() / 1e9);
        if (disk != null) {
            line(sb, "", "(and %.2f s after serving waiting for the disk tier's queued writes)", p.diskDrain() / 1e9);
        }
        sb.append('\n');
        DemoVerdict verdict = verdict();
        if (verdict.passed()) {
            sb.append(verdict.line(verifiedBytes)).append('\n');
        } else {
            sb.append("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
            verdict.reasons().forEach(reason -> sb.append("FAIL: ").append(reason).append('\n'));
            problems.forEach(pr -> sb.append("  ").append(pr).append('\n'));
            sb.append("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
        }
        return sb.toString();
    }

    /** The disk, remote and controller lines of the text report, for the tiers in the run. */
    private void tierLines(StringBuilder sb) {
        if (disk != null) {
            Disk d = disk;
            line(sb, "disk tier", "%s, %s I/O: %,d chunks written (%s), %,d read back (retrieve hits served from disk,",
                    HostArenas.formatBytes(d.capacityBytes()), d.directIo() ? "O_DIRECT" : "buffered (O_DIRECT unsupported here)",
                    d.writes(), HostArenas.formatBytes(d.writes() * diskFileBytes()), d.reads());
            line(sb, "", "%,d tokens), %,d evictions; %,d chunks (%s) on disk at the end; recovered at start: %,d chunks (%s)",
                    d.reads() * settings.chunkSize(), d.evictions(), d.chunks(), HostArenas.formatBytes(d.usedBytes()),
                    d.recoveredChunks(), HostArenas.formatBytes(d.recoveredBytes()));
            if (d.droppedPuts() + d.rejectedPuts() + d.ioFailures() > 0) {
                line(sb, "", "%,d stores skipped the disk (write queue full), %,d writes refused (no room), %,d I/O failures",
                        d.droppedPuts(), d.rejectedPuts(), d.ioFailures());
            }
            if (d.corruptChunksDropped() > 0) {
                line(sb, "", "%,d corrupt chunk files dropped at read (checksum mismatch: served as misses, recomputed)",
                        d.corruptChunksDropped());
            }
            if (d.corruptRemovedAtStart() > 0) {
                line(sb, "", "%,d chunk files of an earlier run failed their checks at start and were removed "
                        + "(never offered to lookup)", d.corruptRemovedAtStart());
            }
            if (d.foreignEntries() > 0) {
                line(sb, "", "%s", d.foreignSummary());
            }
        }
        if (remote != null) {
            Remote r = remote;
            line(sb, "remote", "%s: %s;", r.url(), r.health().describe());
            line(sb, "", "%,d of %,d puts stored (%s), %,d chunks read (hits served by the remote store, %s)",
                    r.puts(), r.attemptedPuts(), HostArenas.formatBytes(r.putBytes()), r.gets(),
                    HostArenas.formatBytes(r.getBytes()));
            if (r.failedPuts() + r.droppedPuts() + r.failedReads() > 0) {
                line(sb, "", "%,d puts failed, %,d dropped while a blackhole stood in, %,d lookups or reads failed (misses)",
                        r.failedPuts(), r.droppedPuts(), r.failedReads());
            }
        }
        if (controller != null) {
            Controller c = controller;
            line(sb, "controller", "%s as instance %s: %s; %,d admits and evictions reported, %,d dropped, %,d full syncs",
                    c.controllerAddress(), c.instanceId(), c.registered() ? "registered" : "NOT registered",
                    c.opsReported(), c.opsDropped(), c.fullSyncs());
        }
    }

    /** Bytes one full chunk's file takes: a 4 KiB header and the payload in whole 4 KiB blocks. */
    private long diskFileBytes() {
        return 4096 + (settings.chunkBytes() + 4095) / 4096 * 4096;
    }

    /** The steady store bandwidth (all of it without evictions) ÷ chunk-piece memcpy. */
    public double storeVsMemcpy() {
        return steadyStore() / memcpyChunk.gbps();
    }

    /** The steady store bandwidth ÷ block-piece memcpy. */
    public double storeVsBlockMemcpy() {
        return steadyStore() / memcpyBlock.gbps();
    }

    private double steadyStore() {
        return Double.isNaN(storeSteadyGbps) ? storeCopyGbps : storeSteadyGbps;
    }

    private static void line(StringBuilder sb, String label, String format, Object... args) {
        sb.append(String.format(Locale.ROOT, "%-10s ", label)).append(String.format(Locale.ROOT, format, args)).append('\n');
    }

    /** The report as one JSON object. */
    public String json() {
        ReportJson j = new ReportJson();
        j.integer("requests", requests());
        j.number("hit_rate", hitRate(), 4);
        j.integer("verified_bytes", verifiedBytes);
        j.integer("mismatches", mismatchingBytes);
        j.number("store_gbps", storeCopyGbps, 3);
        j.number("retrieve_gbps", retrieveCopyGbps, 3);
        j.number("memcpy_gbps", memcpyChunk.gbps(), 3);
        j.number("store_steady_gbps", storeSteadyGbps, 3);
        j.integer("tier_full_at_request", tierFullAt);
        j.number("store_e2e_gbps", storeE2eGbps, 3);
        j.number("retrieve_e2e_gbps", retrieveE2eGbps, 3);
        j.number("memcpy_block_gbps", memcpyBlock.gbps(), 3);
        j.number("store_vs_memcpy", storeVsMemcpy(), 3);
        j.number("retrieve_vs_memcpy", retrieveCopyGbps / memcpyChunk.gbps(), 3);
        j.number("store_vs_block_memcpy", storeVsBlockMemcpy(), 3);
        j.number("retrieve_vs_block_memcpy", retrieveCopyGbps / memcpyBlock.gbps(), 3);
        DemoVerdict verdict = verdict();
        j.bool("passed", verdict.passed());
        j.string("verdict", verdict.outcome().name().toLowerCase(Locale.ROOT));
        j.integer("exit_status", verdict.exitStatus());
        j.integer("lookup_retrieve_disagreements", disagreements);
        j.integer("lookup_shortfall_tokens", shortfallTokens);
        j.integer("mask_holes", maskHoles);
        j.integer("retrieves_beyond_lookup", retrievesBeyondLookup);
        for (Workload.Kind k : Workload.Kind.values()) {
            j.integer("requests_" + k.name().toLowerCase(Locale.ROOT), kinds.getOrDefault(k, 0));
        }
        j.integer("requests_with_hit", requestsWithHit);
        j.integer("conversations", conversations);
        j.integer("prompt_tokens", promptTokens);
        j.integer("tokens_reused", reusedTokens);
        j.integer("tokens_computed", computedTokens);
        j.integer("tokens_stored", storedTokens);
        j.integer("lookup_hit_tokens", lookupHitTokens);
        j.number("engine_retrieve_hit_rate", engineRetrieveHitRate, 4);
        j.integer("stored_bytes", storedBytes);
        j.integer("retrieved_bytes", retrievedBytes);
        j.integer("memcpy_bytes", memcpyChunk.bytes());
        j.integer("memcpy_piece_bytes", memcpyChunk.pieceBytes());
        j.integer("memcpy_block_piece_bytes", memcpyBlock.pieceBytes());
        j.integer("memcpy_buffer_bytes", memcpyChunk.bufferBytes());
        j.integer("evictions", evictions);
        j.integer("eviction_failures", evictionFailures);
        j.integer("cached_chunks_end", cachedChunks);
        j.integer("cpu_tier_bytes", cpuBytes);
        j.integer("cpu_tier_chunks", cpuChunks);
        j.integer("layers", settings.layers());
        j.integer("kv_heads", settings.kvHeads());
        j.integer("head_size", settings.headSize());
        j.string("dtype", ServingSimulator.DTYPE.torchName());
        j.integer("block_size", settings.blockSize());
        j.integer("chunk_size", settings.chunkSize());
        j.integer("chunk_bytes", settings.chunkBytes());
        j.integer("paged_blocks", pagedBlocks);
        j.integer("seed", settings.seed());
        j.number("wall_s", phases.wall() / 1e9, 3);
        j.number("compute_s", phases.compute() / 1e9, 3);
        j.number("verify_s", phases.verify() / 1e9, 3);
        j.number("retrieve_s", phases.retrieve() / 1e9, 3);
        j.number("store_s", phases.store() / 1e9, 3);
        j.number("lookup_s", phases.lookup() / 1e9, 3);
        tierFields(j);
        j.string("bandwidth_method", "store_gbps/retrieve_gbps: engine metrics, bytes the connector copied / time in copies, "
                + "whole run; store_steady_gbps: the same from the first eviction on (the tier's memory all touched); "
                + "*_e2e_gbps: bytes stored (retrieved) / wall time of the store (retrieve) calls; memcpy_gbps: "
                + "MemorySegment.copy of chunk-sized pieces between two touched off-heap buffers, same total bytes as the "
                + "stores; memcpy_block_gbps: the same in pieces of one paged block of one layer and plane; "
                + "store_vs_*: store_steady_gbps (store_gbps without evictions) / memcpy");
        if (!verdict.passed()) {
            j.string("failure", String.join("; ", verdict.reasons()));
        }
        if (!problems.isEmpty()) {
            j.string("problems", String.join("; ", problems));
        }
        return j.toString();
    }

    /** The remote, controller and disk tiers' counters (zero or absent for a tier not in the run). */
    private void tierFields(ReportJson j) {
        j.bool("remote_enabled", remote != null);
        j.integer("remote_puts", remote == null ? 0 : remote.puts());
        j.integer("remote_gets", remote == null ? 0 : remote.gets());
        j.integer("remote_attempted_puts", remote == null ? 0 : remote.attemptedPuts());
        j.integer("remote_failed_puts", remote == null ? 0 : remote.failedPuts());
        j.integer("remote_dropped_puts", remote == null ? 0 : remote.droppedPuts());
        j.integer("remote_lost_puts", remote == null ? 0 : remote.failedPuts() + remote.droppedPuts());
        j.integer("remote_failed_reads", remote == null ? 0 : remote.failedReads());
        if (remote != null) {
            RemoteHealth h = remote.health();
            j.string("remote_state", h.state().name().toLowerCase(Locale.ROOT));
            j.number("remote_state_s", h.stateFor().toNanos() / 1e9, 3);
            j.integer("remote_consecutive_failures", h.consecutiveFailures());
            j.bool("remote_ever_answered", h.everSucceeded());
            j.string("remote_last_error", h.lastError());
        }
        j.bool("controller_enabled", controller != null);
        if (controller != null) {
            j.string("controller_instance_id", controller.instanceId());
            j.bool("controller_registered", controller.registered());
            j.integer("controller_ops_reported", controller.opsReported());
            j.integer("controller_ops_dropped", controller.opsDropped());
            j.integer("controller_full_syncs", controller.fullSyncs());
        }
        j.bool("disk_enabled", disk != null);
        j.integer("disk_writes", disk == null ? 0 : disk.writes());
        j.integer("disk_reads", disk == null ? 0 : disk.reads());
        j.integer("disk_recovered_chunks", disk == null ? 0 : disk.recoveredChunks());
        j.integer("disk_recovered_bytes", disk == null ? 0 : disk.recoveredBytes());
        j.integer("disk_evictions", disk == null ? 0 : disk.evictions());
        j.integer("disk_dropped_puts", disk == null ? 0 : disk.droppedPuts());
        j.integer("disk_rejected_puts", disk == null ? 0 : disk.rejectedPuts());
        j.integer("disk_io_failures", disk == null ? 0 : disk.ioFailures());
        j.integer("disk_corrupt_reads", disk == null ? 0 : disk.corruptChunksDropped()); // kept for older readers
        j.integer("disk_corrupt_chunks_dropped", disk == null ? 0 : disk.corruptChunksDropped());
        j.integer("disk_corrupt_removed_at_start", disk == null ? 0 : disk.corruptRemovedAtStart());
        j.integer("disk_foreign_entries", disk == null ? 0 : disk.foreignEntries());
        j.integer("disk_chunks_end", disk == null ? 0 : disk.chunks());
        j.integer("disk_bytes_end", disk == null ? 0 : disk.usedBytes());
        j.integer("disk_capacity_bytes", disk == null ? 0 : disk.capacityBytes());
        j.bool("disk_direct_io", disk != null && disk.directIo());
        j.number("disk_drain_s", phases.diskDrain() / 1e9, 3);
    }
}

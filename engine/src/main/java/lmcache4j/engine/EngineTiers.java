package lmcache4j.engine;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;

import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.pool.LazyGrowingAllocator;
import lmcache4j.allocator.pool.MixedMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.cuda.posix.Posix;
import lmcache4j.engine.config.DiskTierSettings;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.config.P2pSettings;
import lmcache4j.engine.config.PdSettings;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.p2p.ControllerPeerLocator;
import lmcache4j.engine.pd.PdBackend;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.p2p.PeerLocator;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.RemoteConnectors;
import lmcache4j.engine.remote.serde.RemoteSerde;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.ChunkFiles;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.engine.zmq.ZmqAddress;

/**
 * The engine's wiring: builds its tiers from its config (the CPU tier and its memory, the disk and
 * remote tiers) and hands the lower tiers the CPU tier's memory as a {@link MemoryProvider}. The
 * only class of the engine that names concrete tiers.
 */
final class EngineTiers {
    private EngineTiers() {
    }

    /**
     * The P2P tier when {@code enable_p2p} is set: peers are found through the controller's
     * {@code BatchedP2PLookupMsg}, so it needs {@code enable_controller}. Serving this engine's
     * tiers to peers is the server module's transfer server.
     */
    static Optional<Function<MemoryProvider, StorageBackend>> controllerP2pTier(
            LMCacheEngineConfig config, ModelMetadata metadata, ControllerKeys.Index keys) {
        Optional<P2pSettings> p2p = config.p2p();
        if (p2p.isEmpty()) {
            return Optional.empty();
        }
        if (!config.enableController()) {
            throw new IllegalArgumentException("enable_p2p needs enable_controller (the controller says which peer holds "
                    + "a chunk, as in LMCache)");
        }
        String reply = ZmqAddress.of(config.controllerReplyUrl()
                .orElseThrow(() -> new IllegalArgumentException("enable_p2p with enable_controller needs "
                        + "controller_reply_url")), "controller_reply_url");
        P2pSettings s = p2p.get();
        return Optional.of(memory -> P2pBackend.overController(
                new ControllerPeerLocator(reply, config.lmcacheInstanceId(), metadata.workerId(), s.timeout(), keys::key,
                        DeploymentSecret.fromConfig(config)),
                memory, config.lmcacheInstanceId(), s.timeout(), DeploymentSecret.p2pToken(config, s), s.connections()));
    }

    /** The P2P tier over a given {@code locator}, never fetching from {@code instanceId} itself. */
    static Optional<Function<MemoryProvider, StorageBackend>> p2pTier(LMCacheEngineConfig config, P2pSettings p2p,
                                                                       PeerLocator locator, String instanceId) {
        String token = DeploymentSecret.p2pToken(config, p2p);
        return Optional.of(memory -> new P2pBackend(locator, memory, instanceId, p2p.timeout(), token,
                p2p.connections()));
    }

    /**
     * The CPU tier of {@code max_local_cpu_size}, the configured disk and remote tiers, then
     * {@code extraTiers}, then {@code lowest} (the P2P tier) last, given the CPU tier's memory: a
     * chunk no tier of this engine holds is looked for on peers. All in search order, owned by the
     * returned manager; whatever was opened is closed again when a tier cannot be opened.
     */
    static StorageManager open(LMCacheEngineConfig config, ModelMetadata metadata, List<StorageBackend> extraTiers,
                               Optional<Function<MemoryProvider, StorageBackend>> lowest) {
        LocalCpuBackend cpu = new LocalCpuBackend(cpuPool(config, metadata), config.cachePolicy(), config.localCpu(),
                config.blockingTimeoutSecs());
        List<StorageBackend> tiers = new ArrayList<>();
        try {
            pdTier(config, metadata, cpu).ifPresent(tiers::add);
            diskTier(config, metadata, cpu).ifPresent(tiers::add);
            remoteTier(config, metadata, cpu).ifPresent(tiers::add);
        } catch (RuntimeException e) {
            tiers.forEach(StorageBackend::close);
            cpu.close();
            throw e;
        }
        tiers.addAll(extraTiers);
        try {
            lowest.ifPresent(tier -> tiers.add(tier.apply(cpu)));
        } catch (RuntimeException e) {
            tiers.forEach(StorageBackend::close);
            cpu.close();
            throw e;
        }
        return new StorageManager(cpu, tiers);
    }

    /**
     * A decoder's PD tier ({@code enable_pd} with {@code pd_role: receiver}), searched right after the
     * CPU tier, as LMCache puts its PD backend first: chunks its prefiller pushed. Its receive server
     * (the ports senders connect to) is {@code PdReceiver}. A sender's engine
     * has no PD tier: its pushes go through {@code PdSender}.
     */
    static Optional<StorageBackend> pdTier(LMCacheEngineConfig config, ModelMetadata metadata, MemoryProvider memory) {
        return config.pd().filter(pd -> pd.role() == PdSettings.Role.RECEIVER)
                .map(pd -> PdBackend.create(pd, metadata, config.chunkSize(), memory));
    }

    /**
     * The disk tier when {@code local_disk} and {@code max_local_disk_size} are set
     * ({@link DiskTierSettings}): with several directories, worker {@code i} takes directory
     * {@code i mod n} ({@code local_disk_path_sharding: by_gpu}).
     */
    static Optional<StorageBackend> diskTier(LMCacheEngineConfig config, ModelMetadata metadata, MemoryProvider memory) {
        Optional<DiskTierSettings> settings = config.diskTier();
        if (settings.isEmpty()) {
            return Optional.empty();
        }
        DiskTierSettings disk = settings.get();
        Path dir = disk.directoryOf(metadata.workerId());
        try {
            ChunkFiles files = new ChunkFiles(dir, disk.directIo(), disk.fsync(), disk.claimNonemptyDir());
            return Optional.of(new LocalDiskBackend(files, memory, disk.capacityBytes(), disk.cachePolicy(), disk.ioThreads(),
                    disk.maxQueuedPuts(), disk.verifyInBackground()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the disk tier at " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * The remote tier when {@code remote_url} is set ({@link RemoteTierSettings}), over the connector
     * its scheme names, storing objects through the {@link RemoteSerde} {@code remote_serde} names.
     */
    static Optional<StorageBackend> remoteTier(LMCacheEngineConfig config, ModelMetadata metadata, MemoryProvider memory) {
        return config.remoteTier().map(remote -> new RemoteBackend(RemoteConnectors.create(config, metadata), memory,
                remote.blockingTimeoutSecs(), remote.pingIntervalSecs(), remote.pingTimeoutSecs(),
                remote.readsAsWorkerZero(metadata.mla(), metadata.worldSize(), metadata.workerId()),
                remote.serde()));
    }

    static MemoryAllocator cpuPool(LMCacheEngineConfig config, ModelMetadata metadata) {
        long bytes = config.maxLocalCpuSizeBytes();
        long chunk = metadata.chunkBytes(config.chunkSize());
        if (bytes < chunk) {
            throw new IllegalArgumentException("max_local_cpu_size " + config.maxLocalCpuSizeGb() + " GB holds no full chunk of "
                    + chunk + " bytes (" + metadata.numLayers() + " layers × " + config.chunkSize() + " tokens)");
        }
        // Prefaulted at start (as pinned memory is): first writes would otherwise pay page faults inside stores.
        HostArenaOptions options = HostArenaOptions.DEFAULT.withHugePages(true).withPrefault(true);
        OptionalInt node = numaNode(config, metadata);
        if (node.isPresent()) {
            options = options.withNumaNode(node.getAsInt());
        }
        HostArenaOptions arenaOptions = options;
        MemoryAllocator kv;
        if (config.enableLazyMemoryAllocator() && config.maxLocalCpuSizeGb() > config.lazyMemorySafeSizeGb()) {
            kv = new LazyGrowingAllocator("LocalCPUBackend", bytes, TensorMemoryAllocator.DEFAULT_ALIGNMENT,
                    config.lazyMemoryInitialRatio(), config.lazyMemoryStepRatio(), config.lazyMemoryExpandTriggerRatio(),
                    size -> HostArena.allocate(size, arenaOptions));
        } else {
            kv = TensorMemoryAllocator.create("LocalCPUBackend", HostArena.allocate(bytes, arenaOptions),
                    TensorMemoryAllocator.DEFAULT_ALIGNMENT);
        }
        return new MixedMemoryAllocator("LocalCPUBackend", kv);
    }

    /** {@code numa_mode}: none; {@code auto} = the node this thread runs on; {@code manual} = extra_config mapping. */
    private static OptionalInt numaNode(LMCacheEngineConfig config, ModelMetadata metadata) {
        Optional<String> mode = config.numaMode();
        if (mode.isEmpty()) {
            return OptionalInt.empty();
        }
        if (mode.get().equals("auto")) {
            return OptionalInt.of(Posix.getcpu().node());
        }
        Map<?, ?> mapping = config.gpuToNumaMapping().orElseThrow(() -> new IllegalArgumentException(
                "numa_mode manual needs extra_config.gpu_to_numa_mapping (device index → NUMA node)"));
        if (mapping.get(String.valueOf(metadata.workerId())) instanceof Number n) {
            return OptionalInt.of(n.intValue());
        }
        throw new IllegalArgumentException("extra_config.gpu_to_numa_mapping has no node for device "
                + metadata.workerId() + ": " + mapping);
    }
}

package lmcache4j.bench.demo.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.bench.demo.Workload;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.lookup.LookupClient;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.router.KvAwareRouter;
import lmcache4j.server.router.PrefixSource;
import lmcache4j.server.router.Route;
import lmcache4j.server.controller.internal.ControllerParts;

/**
 * Many instances, one cache, end to end: for each {@link Policy}, a cache controller (in this
 * process) and N instance processes ({@link InstanceMain}: each a serving engine with its own paged
 * KV cache, CPU tier and disk tier, reporting to the controller, with a lookup server and, with
 * P2P, a transfer server), then the demo's verified workload played through them. This process is
 * the serving cluster's scheduler and router: for each request it picks an instance (in turn, or
 * through the {@link KvAwareRouter} over the controller's index), asks that instance's lookup
 * server through LMCache's asynchronous lookup client (which starts the prefetch from every tier,
 * peers included), and has the instance retrieve, verify every byte, compute the rest and store.
 *
 * <p>Before the lookup, the instance is sent the prompt ({@code admit}): its engine keys chunks by
 * 256-bit hashes while LMCache's lookup wire carries 64-bit ones, so an engine resolves a lookup
 * only for chunks it has hashed itself (docs/interop.md). In vLLM the worker learns the tokens
 * with the scheduled request; here it learns them one step earlier.
 */
public final class ClusterDemo {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration REGISTRATION_TIMEOUT = Duration.ofSeconds(30);

    /** Told after each request. */
    @FunctionalInterface
    public interface Progress {
        void update(Policy policy, int done, int total, long promptTokens, long reusedTokens);
    }

    private final ClusterSettings settings;

    public ClusterDemo(ClusterSettings settings) {
        this.settings = settings;
    }

    /** Plays the workload under every policy, one after the other, each on a fresh controller and fresh instances. */
    public ClusterReport run(Progress progress) throws IOException {
        List<ClusterReport.PolicyRun> runs = new ArrayList<>();
        for (Policy p : Policy.values()) {
            runs.add(run(p, progress));
        }
        return new ClusterReport(settings, runs);
    }

    /** One policy, on a fresh controller and fresh instances. */
    ClusterReport.PolicyRun run(Policy policy, Progress progress) throws IOException {
        Path dir = Files.createDirectories(settings.workDir().resolve(policy.key()));
        int n = settings.instances();
        // The demo's deployment authenticates as an operator's should: one secret, CURVE on the control plane. With
        // --insecure the control plane is plain (as LMCache's Python workers need) and P2P keeps a token of its own.
        String secretFile = "";
        String p2pTokenFile = "";
        if (settings.insecure()) {
            Path tokenFile = dir.resolve("p2p-token");
            DeploymentSecret.createTokenFile(tokenFile);
            p2pTokenFile = tokenFile.toString();
        } else {
            secretFile = dir.resolve("deployment-secret").toString();
            DeploymentSecret.createFile(Path.of(secretFile));
        }
        ControllerConfig controllerConfig = ControllerConfig.loopbackAnyPorts()
                .withHashSeed(Optional.of(ServingSimulator.Settings.HASH_SEED)).withSecretFile(Optional.of(secretFile).filter(f -> !f.isEmpty()).map(Path::of));
        List<InstanceProcess> processes = new ArrayList<>();
        List<LookupClient> clients = new ArrayList<>();
        List<InstanceSpec> specs = new ArrayList<>();
        try (ControllerServer controller = ControllerServer.start(controllerConfig)) {
            int[] ports = freePorts(3 * n);
            for (int i = 0; i < n; i++) {
                Path disk = Files.createDirectories(dir.resolve("instance-" + i + "-disk"));
                specs.add(new InstanceSpec("instance-" + i, settings.cpuGb(), disk, settings.diskGb(), settings.layers(),
                        settings.seed(), controller.pullEndpoint().connectable().toString(),
                        controller.replyEndpoint().connectable().toString(), policy.p2p() ? ports[3 * i + 2] : 0,
                        "tcp://127.0.0.1:" + ports[3 * i], "tcp://127.0.0.1:" + ports[3 * i + 1], secretFile, p2pTokenFile));
            }
            for (InstanceSpec spec : specs) { // all start at once; each is waited for below
                processes.add(InstanceProcess.start(spec, dir));
            }
            for (InstanceProcess p : processes) {
                p.await("ready", START_TIMEOUT);
            }
            awaitRegistrations(controller, specs);
            for (InstanceSpec spec : specs) {
                clients.add(lookupClient(spec));
            }
            KvAwareRouter router = new KvAwareRouter(specs.stream().map(InstanceSpec::instanceId).toList(),
                    PrefixSource.of(controller.lookup()));
            int[] routed = new int[n];
            long routedToPrefix = 0;
            Workload workload = new Workload(Workload.Shape.defaults(settings.seed()));
            long promptTokens = 0;
            long reusedTokens = 0;
            long started = System.nanoTime();
            for (int r = 0; r < settings.requests(); r++) {
                Workload.Request request = workload.next();
                int target;
                if (policy.kvAware()) {
                    Route route = router.route(request.prompt());
                    target = router.instances().indexOf(route.instanceId()); // the specs' order
                    routedToPrefix += route.cachedTokens() > 0 ? 1 : 0;
                } else {
                    target = r % n;
                }
                routed[target]++;
                try {
                    reusedTokens += serve(processes.get(target), clients.get(target), policy, request);
                } finally {
                    if (policy.kvAware()) {
                        router.finished(specs.get(target).instanceId());
                    }
                }
                promptTokens += request.prompt().length;
                progress.update(policy, r + 1, settings.requests(), promptTokens, reusedTokens);
            }
            long wallNanos = System.nanoTime() - started;
            List<ClusterReport.InstanceRun> instances = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Map<String, Object> stats = processes.get(i).call(InstanceProtocol.stats(), "stats", REQUEST_TIMEOUT);
                instances.add(new ClusterReport.InstanceRun(specs.get(i).instanceId(), routed[i], stats));
            }
            closeAll(clients);
            clients.clear();
            List<InstanceEnding> endings = closeProcesses(processes);
            for (int i = 0; i < n; i++) {
                instances.set(i, instances.get(i).withEnding(endings.get(i)));
            }
            return new ClusterReport.PolicyRun(policy, instances, routedToPrefix, wallNanos, router.lookupFailures());
        } finally {
            closeAll(clients);
            closeProcesses(processes);
        }
    }

    /** One request on one instance: admit, the scheduler's asynchronous lookup, then serve. Returns the tokens reused. */
    private static int serve(InstanceProcess instance, LookupClient client, Policy policy, Workload.Request request) {
        String lookupId = policy.key() + "-" + request.index();
        instance.call(InstanceProtocol.admit(lookupId, request.prompt()), "admitted", REQUEST_TIMEOUT);
        int hit;
        try {
            // Polled rather than waited for, so that an instance that dies here fails the run now, not at the timeout.
            OptionalInt answer = client.lookup(request.prompt(), lookupId, Map.of());
            while (answer.isEmpty()) {
                instance.requireAlive("answering lookup " + lookupId);
                Thread.sleep(1);
                answer = client.lookup(request.prompt(), lookupId, Map.of());
            }
            hit = answer.getAsInt();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during a lookup", e);
        } finally {
            client.clearLookupStatus(lookupId);
        }
        Map<String, Object> served = instance.call(InstanceProtocol.serve(lookupId, hit, request), "served", REQUEST_TIMEOUT);
        return ((Number) served.get("retrieved")).intValue();
    }

    /** The scheduler's lookup client for one instance: hashing exactly as the instance's engine does. */
    private LookupClient lookupClient(InstanceSpec spec) {
        ServingSimulator.Settings s = spec.settings();
        ConfigLoader.Builder b = ConfigLoader.builder().environment(Map.of()).set("chunk_size", s.chunkSize())
                .set("max_local_cpu_size", s.cpuGb()).set("hash_seed", ServingSimulator.Settings.HASH_SEED);
        spec.configure(b);
        return LookupClient.open(b.build(), s.metadata());
    }

    private static void awaitRegistrations(ControllerServer controller, List<InstanceSpec> specs) {
        long deadline = System.nanoTime() + REGISTRATION_TIMEOUT.toNanos();
        for (InstanceSpec spec : specs) {
            while (ControllerParts.registry(controller).workersOf(spec.instanceId()).isEmpty()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(spec.instanceId() + " did not register with the controller within "
                            + REGISTRATION_TIMEOUT.toSeconds() + " s");
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for registrations", e);
                }
            }
        }
    }

    /** Ends every process at once (each closes its engine and checks for leaks) and says how each ended. */
    private static List<InstanceEnding> closeProcesses(List<InstanceProcess> processes) {
        List<Thread> closers = new ArrayList<>();
        for (InstanceProcess p : processes) {
            closers.add(Thread.ofVirtual().start(p::close));
        }
        for (Thread t : closers) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return processes.stream().map(InstanceProcess::ending).toList();
    }

    private static void closeAll(List<LookupClient> clients) {
        for (LookupClient c : clients) {
            c.close();
        }
    }

    /** {@code count} distinct free loopback ports (held together while chosen, so none repeats). */
    static int[] freePorts(int count) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(s);
                ports[i] = s.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
    }
}

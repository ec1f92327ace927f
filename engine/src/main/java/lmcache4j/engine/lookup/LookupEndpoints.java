package lmcache4j.engine.lookup;

import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Objects;
import java.util.stream.IntStream;

import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * Where the lookup service's sockets are: the scheduler's answer socket, each worker rank's request
 * socket, and which ranks run a lookup server. LMCache derives ipc:// paths from
 * {@code lmcache_rpc_port}; lmcache4j takes the URLs explicitly ({@code lookup_scheduler_url},
 * {@code lookup_worker_urls}). Only loopback {@code tcp://} and {@code ipc://} are accepted: the
 * service has no authentication, so it never listens beyond the host.
 *
 * @param schedulerUrl    where the client binds PULL and every server connects PUSH
 * @param workerUrls      rank → where that rank's server binds PULL and the client connects PUSH
 * @param serverWorkerIds the ranks that run a lookup server, ascending
 */
public record LookupEndpoints(String schedulerUrl, List<String> workerUrls, List<Integer> serverWorkerIds) {
    public LookupEndpoints {
        checkUrl("lookup_scheduler_url", schedulerUrl);
        workerUrls = List.copyOf(workerUrls);
        for (String url : workerUrls) {
            checkUrl("lookup_worker_urls", url);
        }
        serverWorkerIds = serverWorkerIds.stream().sorted().distinct().toList();
        if (serverWorkerIds.isEmpty()) {
            throw new IllegalArgumentException("no worker runs a lookup server");
        }
        for (int rank : serverWorkerIds) {
            if (rank < 0 || rank >= workerUrls.size()) {
                throw new IllegalArgumentException("lookup_server_worker_ids names worker " + rank + " but "
                        + "lookup_worker_urls has " + workerUrls.size() + " URL(s) (one per rank, from 0)");
            }
        }
    }

    /**
     * The endpoints a config names for a deployment of {@code worldSize} workers; with no
     * {@code lookup_server_worker_ids} (or an empty list) every worker serves, except for an MLA
     * model when the list is unset, where worker 0 does (LMCache's defaults).
     *
     * @throws IllegalArgumentException when a URL is missing or not a loopback tcp:// or ipc:// URL
     */
    public static LookupEndpoints of(LMCacheEngineConfig config, int worldSize, boolean mla) {
        String scheduler = config.lookupSchedulerUrl().orElseThrow(() -> new IllegalArgumentException(
                "the lookup service needs lookup_scheduler_url (for example tcp://127.0.0.1:5570)"));
        List<String> workers = config.lookupWorkerUrls().orElseThrow(() -> new IllegalArgumentException(
                "the lookup service needs lookup_worker_urls, one per worker rank (for example tcp://127.0.0.1:5571)"));
        if (workers.size() < worldSize) {
            throw new IllegalArgumentException("lookup_worker_urls has " + workers.size() + " URL(s) for " + worldSize
                    + " workers; give one per rank");
        }
        List<Integer> ids = config.lookupServerWorkerIds()
                .map(list -> list.isEmpty() ? IntStream.range(0, worldSize).boxed().toList() : list)
                .orElse(mla ? List.of(0) : IntStream.range(0, worldSize).boxed().toList());
        return new LookupEndpoints(scheduler, workers, ids);
    }

    /** Whether rank {@code workerId} runs a lookup server. */
    public boolean servesLookups(int workerId) {
        return serverWorkerIds.contains(workerId);
    }

    /** Where rank {@code workerId}'s lookup server binds. */
    public String workerUrl(int workerId) {
        Objects.checkIndex(workerId, workerUrls.size());
        return workerUrls.get(workerId);
    }

    private static void checkUrl(String field, String url) {
        Objects.requireNonNull(url, field);
        if (url.startsWith("ipc://") && url.length() > "ipc://".length()) {
            return;
        }
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(field + ": '" + url + "' is not a URL: " + e.getMessage(), e);
        }
        if (!"tcp".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 1) {
            throw new IllegalArgumentException(field + ": '" + url + "' must be tcp://<loopback host>:<port> or ipc://<path>");
        }
        try {
            if (!InetAddress.getByName(uri.getHost()).isLoopbackAddress()) {
                throw new IllegalArgumentException(field + ": '" + url + "' is not a loopback address; the lookup "
                        + "service is unauthenticated and listens on this host only");
            }
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(field + ": unknown host in '" + url + "'", e);
        }
    }
}

package lmcache4j.engine.p2p;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.controller.ControllerWorker;
import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.MalformedMessageException;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * A {@link PeerLocator} over the cache controller: LMCache's {@code BatchedP2PLookupMsg} (the chunks'
 * controller keys, {@link ControllerKeys}) on a DEALER to {@code controller_reply_url},
 * answered by {@code BatchedP2PLookupRetMsg}. One socket, owned by one thread; one lookup at a time
 * (a lookup asks for a whole prompt's keys in one message). A lookup past the timeout fails and the
 * socket is replaced, so a late answer never answers the next question.
 */
public final class ControllerPeerLocator implements PeerLocator, AutoCloseable {
    private final String replyAddress;
    private final String instanceId;
    private final int workerId;
    private final Duration timeout;
    private final ZContext context = new OwnedZContext("p2p-controller-lookup", 1);
    private final Optional<DeploymentSecret> secret;
    private final OwnedThreads threads = new OwnedThreads();
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> threads.platform("p2p-controller-lookup", r));
    private final Function<ChunkHash, OptionalLong> keys;
    private ZMQ.Socket dealer; // only touched on the thread

    /**
     * @param replyAddress the controller's ROUTER, a ZeroMQ address ({@code tcp://host:port})
     * @param instanceId   this instance ({@code lmcache_instance_id}), which the controller leaves out
     * @param workerId     this worker; the controller answers with the same worker of each peer
     * @param timeout      the longest one lookup waits
     * @param keys         a chunk's controller key, empty when this engine has not keyed it (the lookup
     *                     then asks for the prefix before it)
     */
    public ControllerPeerLocator(String replyAddress, String instanceId, int workerId, Duration timeout,
                                 Function<ChunkHash, OptionalLong> keys) {
        this(replyAddress, instanceId, workerId, timeout, keys, Optional.empty());
    }

    /** As above, connecting with the deployment's CURVE keys when {@code secret} is present. */
    public ControllerPeerLocator(String replyAddress, String instanceId, int workerId, Duration timeout,
                                 Function<ChunkHash, OptionalLong> keys, Optional<DeploymentSecret> secret) {
        this.secret = Objects.requireNonNull(secret, "secret");
        this.replyAddress = Objects.requireNonNull(replyAddress, "replyAddress");
        this.instanceId = Objects.requireNonNull(instanceId, "instanceId");
        this.workerId = workerId;
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.keys = Objects.requireNonNull(keys, "keys");
    }

    @Override
    public CompletableFuture<List<PeerHolding>> locate(List<? extends CacheKey> keys) {
        long[] all = new long[keys.size()];
        int known = 0;
        for (CacheKey key : keys) {
            OptionalLong k = this.keys.apply(key.chunkKey().chunkHash());
            if (k.isEmpty()) {
                break; // a prefix lookup: what follows an unkeyed chunk cannot be reused anyway
            }
            all[known++] = k.getAsLong();
        }
        long[] hashes = Arrays.copyOf(all, known);
        CompletableFuture<List<PeerHolding>> answer = new CompletableFuture<>();
        try {
            thread.execute(() -> {
                try {
                    answer.complete(ask(new WorkerReqMsg.BatchedP2PLookupMsg(hashes, instanceId, workerId)));
                } catch (Exception e) {
                    answer.completeExceptionally(e);
                }
            });
        } catch (RejectedExecutionException e) {
            answer.completeExceptionally(new IllegalStateException("the controller peer locator is closed", e));
        }
        return answer;
    }

    private List<PeerHolding> ask(WorkerReqMsg.BatchedP2PLookupMsg question) throws TimeoutException, MalformedMessageException {
        if (dealer == null) {
            dealer = context.createSocket(SocketType.DEALER);
            secret.ifPresent(s -> s.connectAsMember(dealer));
            dealer.setLinger(0);
            dealer.setMaxMsgSize(ControllerWorker.MAX_MESSAGE_BYTES); // an answer names holders, never KV
            dealer.connect(replyAddress);
        }
        dealer.sendMore(new byte[0]);
        dealer.send(ControllerCodec.encode(question), 0);
        try (ZMQ.Poller poller = context.createPoller(1)) {
            poller.register(dealer, ZMQ.Poller.POLLIN);
            if (poller.poll(timeout.toMillis()) <= 0 || !poller.pollin(0)) {
                dealer.close(); // a late answer must not answer the next question
                dealer = null;
                throw new TimeoutException("the controller at " + replyAddress + " did not answer a P2P lookup within "
                        + timeout.toMillis() + " ms");
            }
        }
        byte[] payload = dealer.recv(0);
        while (dealer.hasReceiveMore()) {
            payload = dealer.recv(0); // [empty, payload]: the last frame is the message
        }
        ControllerMessage reply = ControllerCodec.decode(payload);
        return switch (reply) {
            case WorkerReqRetMsg.BatchedP2PLookupRetMsg r -> r.layoutInfo().stream()
                    .filter(h -> !h.peerInitUrl().isBlank()) // registered without P2P: nothing to fetch from
                    .map(h -> new PeerHolding(h.instanceId(), h.location(), (int) Math.min(Integer.MAX_VALUE,
                            h.numHitChunks()), h.peerInitUrl()))
                    .toList();
            case ErrorMsg e -> throw new IllegalStateException("the controller refused a P2P lookup: " + e.error());
            default -> throw new IllegalStateException("the controller answered a P2P lookup with "
                    + reply.getClass().getSimpleName());
        };
    }

    @Override
    public void close() {
        thread.shutdownNow();
        threads.join(timeout.plusSeconds(1)); // a lookup in flight ends within its timeout
        context.close();
    }
}

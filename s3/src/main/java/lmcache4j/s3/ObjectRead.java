package lmcache4j.s3;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.zip.CRC32C;

import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.remote.RemoteMetadata;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.async.SdkPublisher;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * One chunk's read: a first GET (ranged to {@code s3_part_size} when that is set) whose response
 * says the object's size and user metadata, so the object is allocated once and the bytes go
 * straight from the SDK's buffers into it; the rest of a larger object follows as ranged GETs in
 * parallel, each pinned to the first one's ETag. Ends exactly once: with the object (CRC32C checked
 * when lmcache4j wrote one), with empty for an absent, foreign, short, replaced or corrupt object,
 * or exceptionally when the store failed; the object is released on every path but the first.
 */
final class ObjectRead {
    private final S3Connector connector;
    private final String key;
    private final Function<RemoteMetadata, Optional<MemoryObj>> allocate;
    private final CompletableFuture<Optional<MemoryObj>> result = new CompletableFuture<>();

    // Written by the first part's response, read after it completes (the futures order them).
    private volatile MemoryObj obj;
    private volatile RemoteMetadata metadata;
    private volatile Map<String, String> userMetadata = Map.of();
    private volatile String etag;
    private volatile long total = -1;
    /** Why the first part read nothing into an object: null when it did. */
    private volatile Miss miss;

    private enum Miss { FOREIGN, NO_MEMORY }

    ObjectRead(S3Connector connector, String key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        this.connector = connector;
        this.key = key;
        this.allocate = allocate;
    }

    CompletableFuture<Optional<MemoryObj>> start() {
        int part = connector.partSize();
        GetObjectRequest first = part > 0 ? connector.rangeRequest(key, 0, part - 1L, Optional.empty())
                : GetObjectRequest.builder().bucket(connector.bucket()).key(key).build();
        Part firstPart = new Part(0, true);
        try {
            connector.client().getObject(first, firstPart).whenComplete((copied, failure) -> firstDone(copied, failure));
        } catch (RuntimeException e) {
            fail(e);
        }
        return result;
    }

    private void firstDone(Long copied, Throwable failure) {
        if (failure != null) {
            int status = S3Connector.status(S3Connector.unwrap(failure));
            if (status == 404) {
                finish(Optional.empty()); // absent: the store answered
            } else if (status == 416) { // an empty object: no range of it exists
                connector.countForeign();
                finish(Optional.empty());
            } else if (S3Connector.unwrap(failure) instanceof ShortRead) {
                connector.countShortRead();
                finish(Optional.empty());
            } else {
                fail(failure);
            }
            return;
        }
        if (miss != null) {
            if (miss == Miss.FOREIGN) {
                connector.countForeign();
            }
            finish(Optional.empty());
            return;
        }
        long done = copied;
        if (done == total) {
            verify();
            return;
        }
        List<CompletableFuture<Long>> rest = new ArrayList<>();
        int part = connector.partSize();
        for (long from = done; from < total; from += part) {
            long to = Math.min(from + part, total) - 1;
            GetObjectRequest request = connector.rangeRequest(key, from, to, Optional.ofNullable(etag));
            Part p = new Part(from, false);
            p.expected = to - from + 1;
            try {
                rest.add(connector.client().getObject(request, p));
            } catch (RuntimeException e) {
                rest.add(CompletableFuture.failedFuture(e));
            }
        }
        CompletableFuture.allOf(rest.toArray(CompletableFuture[]::new)).whenComplete((ignored, partFailure) -> {
            if (partFailure == null) {
                verify();
                return;
            }
            int status = S3Connector.status(S3Connector.unwrap(partFailure));
            if (status == 412 || status == 404 || S3Connector.unwrap(partFailure) instanceof ShortRead) {
                // Replaced or deleted while its parts were read, or a part came back short: a miss.
                if (status != 412 && status != 404) {
                    connector.countShortRead();
                }
                finish(Optional.empty());
            } else {
                fail(partFailure);
            }
        });
    }

    /** Every byte is in: the CRC32C lmcache4j wrote, if any, must match. */
    private void verify() {
        Optional<Long> declared = S3Connector.declaredCrc(userMetadata);
        if (declared.isPresent()) {
            CRC32C crc = new CRC32C();
            crc.update(obj.segment().asSlice(0, total).asByteBuffer());
            if (crc.getValue() != declared.get()) {
                connector.countCorrupt();
                connector.deleteQuietly(key);
                finish(Optional.empty());
                return;
            }
        }
        MemoryObj served = obj;
        obj = null; // handed over: no path below releases it
        if (!result.complete(Optional.of(served))) {
            served.release();
        }
    }

    private void finish(Optional<MemoryObj> empty) {
        release();
        result.complete(empty);
    }

    private void fail(Throwable failure) {
        release();
        result.completeExceptionally(S3Connector.unwrap(failure));
    }

    private void release() {
        MemoryObj o = obj;
        obj = null;
        if (o != null) {
            o.release();
        }
    }

    /** The object's whole size, from a ranged response's Content-Range or a whole one's length. */
    private static long totalSize(GetObjectResponse r) {
        String range = r.contentRange();
        if (range != null) {
            int slash = range.lastIndexOf('/');
            if (slash > 0 && !range.endsWith("*")) {
                return Long.parseLong(range.substring(slash + 1).strip());
            }
        }
        return r.contentLength();
    }

    /** A response body shorter or longer than the response said. */
    static final class ShortRead extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ShortRead(String message) {
            super(message);
        }
    }

    /** The bytes of one response, copied into the object at {@link #offset} as they arrive. */
    private final class Part implements AsyncResponseTransformer<GetObjectResponse, Long> {
        private final long offset;
        private final boolean first;
        private long expected;
        private CompletableFuture<Long> future;

        Part(long offset, boolean first) {
            this.offset = offset;
            this.first = first;
        }

        @Override
        public CompletableFuture<Long> prepare() { // once per attempt: the SDK retries with a fresh future
            future = new CompletableFuture<>();
            return future;
        }

        @Override
        public void onResponse(GetObjectResponse response) {
            long length = response.contentLength();
            if (!first) {
                if (length != expected) {
                    future.completeExceptionally(new ShortRead("part at " + offset + " is " + length + " bytes, not " + expected));
                }
                return;
            }
            expected = length;
            long size = totalSize(response);
            Optional<RemoteMetadata> shape = connector.shapeOf(size, response.metadata());
            if (shape.isEmpty()) {
                miss = Miss.FOREIGN;
                return;
            }
            if (obj != null) { // a retried first part: the object allocated by the first attempt serves again
                return;
            }
            metadata = shape.get();
            userMetadata = response.metadata();
            etag = response.eTag();
            total = size;
            Optional<MemoryObj> allocated = allocate.apply(metadata);
            if (allocated.isEmpty()) {
                miss = Miss.NO_MEMORY;
                return;
            }
            obj = allocated.get();
            if (obj.segment().byteSize() < size) {
                obj.release();
                obj = null;
                miss = Miss.NO_MEMORY;
            }
        }

        @Override
        public void onStream(SdkPublisher<ByteBuffer> publisher) {
            publisher.subscribe(new Subscriber<ByteBuffer>() {
                private Subscription subscription;
                private long copied;

                @Override
                public void onSubscribe(Subscription s) {
                    subscription = s;
                    if (future.isDone() || miss != null || obj == null) {
                        s.cancel(); // nothing to read into: the body is not wanted
                        future.complete(0L);
                        return;
                    }
                    s.request(Long.MAX_VALUE);
                }

                @Override
                public void onNext(ByteBuffer bytes) {
                    if (future.isDone()) {
                        return;
                    }
                    int n = bytes.remaining();
                    MemoryObj target = obj;
                    if (target == null || copied + n > expected) {
                        subscription.cancel();
                        future.completeExceptionally(new ShortRead("the body at " + offset + " is longer than " + expected + " bytes"));
                        return;
                    }
                    MemorySegment.copy(MemorySegment.ofBuffer(bytes), 0, target.segment(), offset + copied, n);
                    copied += n;
                }

                @Override
                public void onError(Throwable t) {
                    future.completeExceptionally(t);
                }

                @Override
                public void onComplete() {
                    if (copied != expected) {
                        future.completeExceptionally(new ShortRead("the body at " + offset + " ended after " + copied
                                + " of " + expected + " bytes"));
                    } else {
                        future.complete(copied);
                    }
                }
            });
        }

        @Override
        public void exceptionOccurred(Throwable error) {
            if (future != null) {
                future.completeExceptionally(error);
            }
        }
    }
}

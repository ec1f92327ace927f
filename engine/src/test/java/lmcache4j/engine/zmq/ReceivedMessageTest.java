package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

import zmq.Msg;
import zmq.io.Metadata;

/**
 * A message {@link ReceiveBudget} reserved, read through each method JeroMQ's engine, mechanisms and
 * pipes or the application may call first on a complete message: every one of them returns a small
 * message's reservation (JeroMQ's own first read varies with the socket type and mechanism, so no
 * read may be the one that forgets), and each answers as a plain message of the same bytes, flags
 * and metadata does.
 */
class ReceivedMessageTest {
    private static final int SIZE = 16;
    private static final int FLAGS = Msg.MORE | Msg.COMMAND | Msg.IDENTITY | Msg.CREDENTIAL;
    private static final Metadata METADATA = new Metadata(Map.of(Metadata.PEER_ADDRESS, "127.0.0.1:5555"));

    /** What each read returns, as something {@code equals} compares (arrays as their contents). */
    private static Map<String, Function<Msg, Object>> reads() {
        Map<String, Function<Msg, Object>> reads = new LinkedHashMap<>();
        reads.put("size", Msg::size);
        reads.put("flags", Msg::flags);
        reads.put("hasMore", Msg::hasMore);
        reads.put("isCommand", Msg::isCommand);
        reads.put("isIdentity", Msg::isIdentity);
        reads.put("isDelimiter", Msg::isDelimiter);
        reads.put("isCredential", Msg::isCredential);
        reads.put("check", Msg::check);
        reads.put("data", m -> ByteBuffer.wrap(m.data().clone()));
        reads.put("get()", Msg::get);
        reads.put("get(3)", m -> m.get(3));
        reads.put("getBytes into an array", m -> {
            byte[] dst = new byte[SIZE];
            int n = m.getBytes(2, dst, 0, 5);
            return n + ":" + java.util.Arrays.toString(dst);
        });
        reads.put("getBytes into a buffer", m -> {
            ByteBuffer dst = ByteBuffer.allocate(SIZE);
            int n = m.getBytes(3, dst, 5);
            return n + ":" + java.util.Arrays.toString(dst.array());
        });
        reads.put("getLong", m -> m.getLong(1));
        reads.put("getInt", m -> m.getInt(2));
        reads.put("getShort", m -> m.getShort(4));
        reads.put("transfer", m -> {
            ByteBuffer dst = ByteBuffer.allocate(SIZE);
            m.transfer(dst, 5, 7);
            return java.util.Arrays.toString(dst.array());
        });
        reads.put("getMetadata", Msg::getMetadata);
        return reads;
    }

    /** As JeroMQ's decoder leaves a message: flags set and the buffer filled, nothing else called. */
    private static Msg decoded(Msg m) {
        ByteBuffer b = m.buf();
        for (int i = 0; i < SIZE; i++) {
            b.put(i, (byte) (0x31 + 7 * i));
        }
        m.setFlags(FLAGS);
        return m;
    }

    @Test
    void eachFirstReadOfACompleteSmallMessageReturnsItsReservation() {
        for (var read : reads().entrySet()) {
            ReceiveBudget budget = new ReceiveBudget(ReceiveBudget.HELD_WHILE_PARTIAL_BYTES);
            Msg m = decoded(budget.allocate(SIZE));
            assertEquals(SIZE, budget.heldBytes(), read.getKey() + ": reserved while partial");
            read.getValue().apply(m);
            assertEquals(0, budget.heldBytes(), read.getKey() + " first: the reservation returns");
        }
        ReceiveBudget budget = new ReceiveBudget(ReceiveBudget.HELD_WHILE_PARTIAL_BYTES);
        Msg m = decoded(budget.allocate(SIZE));
        m.setMetadata(METADATA);
        assertEquals(0, budget.heldBytes(), "setMetadata first (the pipe's first touch): the reservation returns");
    }

    @Test
    void eachReadAnswersAsAPlainMessageOfTheSameBytesFlagsAndMetadata() {
        ReceiveBudget budget = new ReceiveBudget(ReceiveBudget.HELD_WHILE_PARTIAL_BYTES);
        Msg received = decoded(budget.allocate(SIZE));
        Msg plain = decoded(new Msg(SIZE));
        assertSame(received, received.setMetadata(METADATA), "setMetadata returns the message itself");
        plain.setMetadata(METADATA);
        for (var read : reads().entrySet()) {
            assertEquals(read.getValue().apply(plain), read.getValue().apply(received), read.getKey());
        }
        assertArrayEquals(plain.data(), received.data());
    }

    @Test
    void aMessageOfNoBytesCostsNothingAndABudgetOfTheSmallestSizeTakesAWholeSmallOne() {
        ReceiveBudget smallest = new ReceiveBudget(ReceiveBudget.HELD_WHILE_PARTIAL_BYTES);
        assertEquals(0, smallest.allocate(0).size(), "an empty message");
        assertEquals(0, smallest.heldBytes());
        Msg whole = smallest.allocate(ReceiveBudget.HELD_WHILE_PARTIAL_BYTES);
        whole.setFlags(Msg.COMMAND);
        assertEquals(ReceiveBudget.HELD_WHILE_PARTIAL_BYTES, smallest.heldBytes(), "exactly the budget: reserved, not refused");
        assertEquals(0, smallest.refused());
        assertEquals(ReceiveBudget.HELD_WHILE_PARTIAL_BYTES, whole.size(), "and received whole");
        assertEquals(0, smallest.heldBytes(), "a message of exactly 64 KiB is small: read, its reservation returns");
    }
}

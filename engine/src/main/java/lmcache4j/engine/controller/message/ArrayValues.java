package lmcache4j.engine.controller.message;

import java.util.Arrays;
import java.util.Optional;

/** Value equality for the records that hold primitive arrays (records compare arrays by identity). */
final class ArrayValues {
    private ArrayValues() {
    }

    static boolean equal(Optional<int[]> a, Optional<int[]> b) {
        return a.isPresent() == b.isPresent() && (a.isEmpty() || Arrays.equals(a.get(), b.get()));
    }

    static int hash(Optional<int[]> a) {
        return a.map(Arrays::hashCode).orElse(-1);
    }

    static String show(Optional<int[]> a) {
        return a.map(Arrays::toString).orElse("None");
    }
}

package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

class TestPrerequisitesTest {
    @Test
    void aPresentPrerequisiteLetsTheTestRun() {
        assertDoesNotThrow(() -> TestPrerequisites.require(true, "/dev/full", Map.of("CI", "true")));
    }

    @Test
    void aMissingPrerequisiteFailsLoudlyInCi() {
        AssertionFailedError e = assertThrows(AssertionFailedError.class,
                () -> TestPrerequisites.require(false, "/dev/full is needed to simulate ENOSPC", Map.of("CI", "true")));
        assertTrue(e.getMessage().contains("/dev/full is needed") && e.getMessage().contains("CI=true"), e.getMessage());
    }

    @Test
    void aMissingPrerequisiteSkipsOutsideCi() {
        TestAbortedException e = assertThrows(TestAbortedException.class,
                () -> TestPrerequisites.require(false, "/dev/full is needed to simulate ENOSPC", Map.of()));
        assertTrue(e.getMessage().contains("/dev/full is needed"), e.getMessage());
        assertThrows(TestAbortedException.class, () -> TestPrerequisites.require(false, "x", Map.of("CI", "false")));
    }

    @Test
    void ciIsAnyValueButEmptyFalseOrZero() {
        assertTrue(TestPrerequisites.inCi(Map.of("CI", "true")));
        assertTrue(TestPrerequisites.inCi(Map.of("CI", "1")));
        assertFalse(TestPrerequisites.inCi(Map.of()));
        assertFalse(TestPrerequisites.inCi(Map.of("CI", "")));
        assertFalse(TestPrerequisites.inCi(Map.of("CI", "FALSE")));
        assertFalse(TestPrerequisites.inCi(Map.of("CI", "0")));
    }
}

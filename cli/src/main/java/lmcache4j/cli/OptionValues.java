package lmcache4j.cli;

import java.time.Duration;

/**
 * Number checks the commands' option setters share, each failing with the one-line message the
 * command prints for a bad argument (exit 2).
 */
final class OptionValues {
    private OptionValues() {
    }

    /** {@code value} as a whole number in {@code min..max} ({@code _} separators allowed). */
    static long wholeNumber(String option, String value, long min, long max) {
        long n;
        try {
            n = Long.parseLong(value.replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " needs a whole number, got '" + CliText.echo(value) + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(option + " must be between " + min + " and " + max + ", got " + n);
        }
        return n;
    }

    /** {@code value} as an int of at least {@code min}. */
    static int intAtLeast(String option, String value, int min) {
        try {
            int v = Integer.parseInt(value);
            if (v >= min) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " '" + CliText.echo(value) + "' must be an integer of at least " + min);
    }

    /** {@code value} as an int from {@code min} to {@code max} (the benchmarks' counts). */
    static int intInRange(String option, String value, int min, int max) {
        try {
            int v = Integer.parseInt(value);
            if (v >= min && v <= max) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " '" + CliText.echo(value) + "' must be an integer from " + min + " to " + max);
    }

    /** {@code value} as a decimal number (sizes in GiB, seconds). */
    static double decimal(String option, String value) {
        try {
            return Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " needs a number, got '" + CliText.echo(value) + "'");
        }
    }

    /** {@code value} seconds, from 1 ms to {@code maxSeconds}. */
    static Duration seconds(String option, String value, long maxSeconds) {
        double s = decimal(option, value);
        if (!(s >= 0.001) || s > maxSeconds) {
            throw new IllegalArgumentException(option + " must be 0.001 to " + maxSeconds + " seconds, got "
                    + CliText.echo(value));
        }
        return Duration.ofNanos((long) (s * 1e9));
    }
}

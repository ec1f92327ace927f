package lmcache4j.server.http;

/** A request the API refuses, answered with {@code status} and the message as {@code {"error": ...}}. */
public final class BadRequestException extends RuntimeException {
    private final int status;

    public BadRequestException(String message) {
        this(400, message);
    }

    public BadRequestException(int status, String message) {
        super(message);
        this.status = status;
    }

    public int status() {
        return status;
    }
}

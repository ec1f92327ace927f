package lmcache4j.engine.controller.message;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * LMCache's {@code HeartbeatCommand}: an instruction the controller piggybacks on a
 * {@link WorkerReqRetMsg.HeartbeatRetMsg}, tagged by {@code "command_type"}.
 * {@code args} values are msgpack values as Java objects: {@code String}, {@code Long},
 * {@code Double}, {@code Boolean}, {@code byte[]}, {@code List}, {@code Map}, or {@code null} for nil.
 */
public sealed interface HeartbeatCommand {
    /** The {@code "command_type"} tag. */
    String commandType();

    /** Why the controller issued it. */
    Optional<String> reason();

    /** Extension arguments. */
    Optional<Map<String, Object>> args();

    /**
     * {@code FullSyncCommand} ({@code command_type "full_sync"}): send every key held, location by
     * location, because the controller lost or never had them.
     *
     * @param reason for example {@code "worker_re_registered"}
     * @param args   extension arguments
     */
    record FullSyncCommand(Optional<String> reason, Optional<Map<String, Object>> args) implements HeartbeatCommand {
        /** The wire tag of this command. */
        public static final String TAG = "full_sync";

        public FullSyncCommand {
            Objects.requireNonNull(reason, "reason");
            Objects.requireNonNull(args, "args");
        }

        /** A full-sync command with a reason and no arguments. */
        public static FullSyncCommand because(String reason) {
            return new FullSyncCommand(Optional.of(reason), Optional.empty());
        }

        @Override
        public String commandType() {
            return TAG;
        }
    }

    /**
     * A command whose tag lmcache4j does not know (kept so that one new command does not make a
     * whole heartbeat reply unreadable); workers log and skip it.
     *
     * @param commandType its tag
     * @param reason      why it was issued
     * @param args        its arguments
     */
    record OtherCommand(String commandType, Optional<String> reason, Optional<Map<String, Object>> args)
            implements HeartbeatCommand {
        public OtherCommand {
            Objects.requireNonNull(commandType, "commandType");
            Objects.requireNonNull(reason, "reason");
            Objects.requireNonNull(args, "args");
        }
    }
}

package lmcache4j.server.controller.index;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Interns holders, instances and locations into small ints and keeps, per holder, the reverse
 * index (the log of its chunk keys, {@link KeyLog}) and, per instance, its entry count. Arrays are indexed by id.
 * Every change happens under {@link ChunkIndex}'s write lock, so an optimistic reader that saw one
 * fails validation; readers only have to survive a torn read (bounds are checked).
 *
 * <p>Not thread-safe: {@link ChunkIndex} serializes writers.
 */
final class HolderTable {
    /** More holders than this is an abuse of the protocol (10^5 instances x ranks x locations). */
    static final int MAX_HOLDERS = 1 << 17;
    static final int MAX_LOCATIONS = 256;
    /** Rank of a location LMCache names: lower is faster to load from. Others rank after these. */
    private static final Map<String, Integer> KNOWN_LOCATION_RANK = Map.of(
            "LocalCPUBackend", 0, "LocalDiskBackend", 1, "GdsBackend", 2, "RemoteBackend", 3);

    private final Map<Holder, Integer> holderIds = new HashMap<>();
    private final Map<String, Integer> instanceIds = new HashMap<>();
    private final Map<String, Integer> locationIds = new HashMap<>();

    // per holder
    Holder[] holders = new Holder[8];
    int[] instanceOf = new int[8];
    int[] locationOf = new int[8];
    /** 1 while the holder's entries count; 0 once it is being removed (readers skip it). */
    byte[] live = new byte[8];
    KeyLog[] keysOf = new KeyLog[8];
    private int[] freeHolders = new int[8];
    private int freeHolderCount;
    private int holderHighWater;

    // per instance
    String[] instanceNames = new String[8];
    long[] instanceEntries = new long[8];
    private int[] instanceHolderCount = new int[8];
    private int[] freeInstances = new int[8];
    private int freeInstanceCount;
    private int instanceHighWater;

    // per location
    String[] locationNames = new String[8];
    int[] locationRank = new int[8];
    private int[] locationHolderCount = new int[8];
    private int[] freeLocations = new int[8];
    private int freeLocationCount;
    private int locationHighWater;

    /** The id of {@code h}, interned on first sight. */
    int intern(Holder h) {
        Integer id = holderIds.get(h);
        if (id != null) {
            return id;
        }
        int holder = freeHolderCount > 0 ? freeHolders[--freeHolderCount] : newHolderSlot();
        int instance = internInstance(h.instanceId());
        int location = internLocation(h.location());
        holders[holder] = h;
        instanceOf[holder] = instance;
        locationOf[holder] = location;
        keysOf[holder] = new KeyLog();
        live[holder] = 1;
        instanceHolderCount[instance]++;
        locationHolderCount[location]++;
        holderIds.put(h, holder);
        return holder;
    }

    /** The id of {@code h}, or -1 when it holds nothing. */
    int find(Holder h) {
        Integer id = holderIds.get(h);
        return id == null ? -1 : id;
    }

    /** Live holders' ids. */
    int[] liveHolderIds() {
        return holderIds.values().stream().mapToInt(Integer::intValue).sorted().toArray();
    }

    /**
     * Marks the holder as going: readers stop counting it and a new {@link #intern} of the same
     * holder gets a fresh id, so its key set is left to the remover alone.
     */
    void markDead(int holder) {
        live[holder] = 0;
        holderIds.remove(holders[holder]);
    }

    /** Frees the id of a dead holder whose entries are all gone. */
    void release(int holder) {
        int instance = instanceOf[holder];
        holders[holder] = null;
        keysOf[holder] = null;
        if (--instanceHolderCount[instance] == 0) {
            instanceIds.remove(instanceNames[instance]);
            instanceNames[instance] = null;
            instanceEntries[instance] = 0;
            freeInstances = push(freeInstances, freeInstanceCount++, instance);
        }
        int location = locationOf[holder];
        if (--locationHolderCount[location] == 0) { // a location no holder uses any more is forgotten
            locationIds.remove(locationNames[location]);
            locationNames[location] = null;
            freeLocations = push(freeLocations, freeLocationCount++, location);
        }
        freeHolders = push(freeHolders, freeHolderCount++, holder);
    }

    int holderCount() {
        return holderIds.size();
    }

    int instanceCount() {
        return instanceIds.size();
    }

    /** Locations some holder uses. */
    int locationCount() {
        return locationIds.size();
    }

    /** Bytes of the reverse index (its logs' arrays) and of these tables. */
    long memoryBytes() {
        long bytes = (long) holders.length * (8 + 4 + 4 + 1 + 8) + (long) instanceNames.length * (8 + 8 + 4);
        for (KeyLog log : keysOf) {
            if (log != null) {
                bytes += log.memoryBytes();
            }
        }
        return bytes;
    }

    private int newHolderSlot() {
        if (holderHighWater == MAX_HOLDERS) {
            throw new IndexLimitException("more than " + MAX_HOLDERS + " (instance, worker, location) holders");
        }
        int id = holderHighWater++;
        if (id == holders.length) {
            int n = holders.length * 2;
            holders = Arrays.copyOf(holders, n);
            instanceOf = Arrays.copyOf(instanceOf, n);
            locationOf = Arrays.copyOf(locationOf, n);
            live = Arrays.copyOf(live, n);
            keysOf = Arrays.copyOf(keysOf, n);
        }
        return id;
    }

    private int internInstance(String name) {
        Integer id = instanceIds.get(name);
        if (id != null) {
            return id;
        }
        int instance;
        if (freeInstanceCount > 0) {
            instance = freeInstances[--freeInstanceCount];
        } else {
            instance = instanceHighWater++;
            if (instance == instanceNames.length) {
                int n = instanceNames.length * 2;
                instanceEntries = Arrays.copyOf(instanceEntries, n);
                instanceHolderCount = Arrays.copyOf(instanceHolderCount, n);
                instanceNames = Arrays.copyOf(instanceNames, n);
            }
        }
        instanceNames[instance] = name;
        instanceEntries[instance] = 0;
        instanceIds.put(name, instance);
        return instance;
    }

    private int internLocation(String name) {
        Integer id = locationIds.get(name);
        if (id != null) {
            return id;
        }
        if (locationIds.size() == MAX_LOCATIONS) {
            throw new IndexLimitException("more than " + MAX_LOCATIONS + " distinct locations in use");
        }
        int location;
        if (freeLocationCount > 0) {
            location = freeLocations[--freeLocationCount];
        } else {
            location = locationHighWater++;
            if (location == locationNames.length) {
                locationNames = Arrays.copyOf(locationNames, location * 2);
                locationRank = Arrays.copyOf(locationRank, location * 2);
                locationHolderCount = Arrays.copyOf(locationHolderCount, location * 2);
            }
        }
        locationNames[location] = name;
        locationRank[location] = KNOWN_LOCATION_RANK.getOrDefault(name, KNOWN_LOCATION_RANK.size() + location);
        locationIds.put(name, location);
        return location;
    }

    private static int[] push(int[] stack, int at, int value) {
        int[] s = at == stack.length ? Arrays.copyOf(stack, at * 2) : stack;
        s[at] = value;
        return s;
    }
}

#if canImport(Glibc)
import CMalloc
import Glibc
#endif

/// glibc's allocator, as the long-running executables set it up and the soak reads it.
public enum Allocator {
    /// At most two arenas: the main one and one shared by the other threads.
    public static let maximumArenas: Int32 = 2

    /// Caps the number of arenas at ``maximumArenas``; `MALLOC_ARENA_MAX` in the environment still wins.
    /// Returns false where the C library has no such setting.
    ///
    /// glibc gives each thread that allocates under contention an arena of its own, up to eight per
    /// core, and keeps what each arena once held. A long-running tally has a D-Bus reader thread, a
    /// storage thread and the cooperative pool, and its heap grew for the first hour of a lecture as
    /// the threads' arenas filled (soak, dbus scenario: anonymous memory 6.1 -> 7.9 MB over the first
    /// 60 lecture minutes, then flat; with two arenas +0.12 to +0.19 MB over minutes 20-60, and 1.2 MB
    /// less at 1,000 voters).
    @discardableResult
    public static func limitArenas() -> Bool {
        set(.arenaMax, to: maximumArenas, unlessEnvironmentHas: "MALLOC_ARENA_MAX")
    }

    /// Blocks up to this size come from the heap, not from mmap: 4 MiB.
    public static let mmapThreshold: Int32 = 4 << 20

    /// Serves blocks up to ``mmapThreshold`` from the heap; `MALLOC_MMAP_THRESHOLD_` in the environment
    /// still wins. Returns false where the C library has no such setting.
    ///
    /// libdbus reads the bus into one buffer that grows to the largest message read, BlueZ's
    /// GetManagedObjects reply (hundreds of kB with a full room), and glibc moves a block that large
    /// to an mmap of its own, where it stays. libdbus then shrinks the buffer after every read and
    /// grows it for the next (`_dbus_string_compact`), and glibc resizes a block of its own mmap with
    /// an `mremap` system call each time: one per read of at most 4 kB, for as long as the tally runs
    /// (strace at saturation: 3,166 mremap for 3,098 polls; perf: 4 % of the central's CPU). On the
    /// heap the same resizes are done in place. Larger blocks (the poll key's 32 MiB scrypt buffer)
    /// are still mapped and given back when freed. Setting it also stops glibc from raising the
    /// threshold by itself, and keeps its trim threshold at 128 kB.
    @discardableResult
    public static func keepBuffersOnTheHeap() -> Bool {
        set(.mmapThreshold, to: mmapThreshold, unlessEnvironmentHas: "MALLOC_MMAP_THRESHOLD_")
    }

    private enum Option { case arenaMax, mmapThreshold }

    /// `mallopt(option, value)`, unless glibc's environment variable for it is set (glibc read it at
    /// start-up, and the user's choice wins). True when the setting is in force either way; false
    /// where the C library has no such setting.
    private static func set(_ option: Option, to value: Int32, unlessEnvironmentHas variable: String) -> Bool {
        #if canImport(Glibc)
        if getenv(variable) != nil { return true }
        switch option {
        case .arenaMax: return mallopt(M_ARENA_MAX, value) == 1
        case .mmapThreshold: return mallopt(M_MMAP_THRESHOLD, value) == 1
        }
        #else
        return false
        #endif
    }

    /// Both settings, as the executables apply them first thing in `main`.
    public static func configure() {
        limitArenas()
        keepBuffersOnTheHeap()
    }

    /// What the allocator holds now, or nil where the C library has no `mallinfo2`.
    public static func usage() -> HeapUsage? {
        #if canImport(Glibc)
        let m = mallinfo2()
        return HeapUsage(inUse: Int(m.uordblks + m.hblkhd), free: Int(m.fordblks))
        #else
        return nil
        #endif
    }
}

/// What glibc's allocator holds (`mallinfo2`): bytes the program has allocated and not freed, and
/// bytes the allocator keeps free for reuse (resident or not). A leak grows the first; a burst that
/// was freed grows only the second.
public struct HeapUsage: Sendable, Encodable, Equatable {
    /// Bytes allocated and not yet freed, blocks served by mmap included.
    public var inUse: Int
    /// Bytes free inside the arenas.
    public var free: Int
}

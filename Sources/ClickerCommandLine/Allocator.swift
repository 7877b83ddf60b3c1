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
    /// less at 1,000 voters). Both executables call this first thing in `main`.
    @discardableResult
    public static func limitArenas() -> Bool {
        #if canImport(Glibc)
        if getenv("MALLOC_ARENA_MAX") != nil { return true }
        return mallopt(M_ARENA_MAX, maximumArenas) == 1
        #else
        return false
        #endif
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

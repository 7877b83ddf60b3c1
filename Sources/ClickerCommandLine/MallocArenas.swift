#if canImport(Glibc)
import CMalloc
import Glibc
#endif

/// glibc's allocator gives each thread that allocates under contention an arena of its own, up to
/// eight per core, and keeps what each arena once held. A long-running tally has a D-Bus reader
/// thread, a storage thread and the cooperative pool, and its heap grew for the first hour of a
/// lecture as the threads' arenas filled (soak, dbus scenario: anonymous memory 6.1 -> 7.9 MB over the
/// first 60 lecture minutes, then flat; with two arenas +0.12 to +0.19 MB over minutes 20-60, and
/// 1.2 MB less at 1,000 voters). Both executables call ``limit()`` first thing in `main`.
public enum MallocArenas {
    /// At most two arenas: the main one and one shared by the other threads.
    public static let maximum: Int32 = 2

    /// Caps the number of arenas at ``maximum``; `MALLOC_ARENA_MAX` in the environment still wins.
    /// Returns false where the C library has no such setting.
    @discardableResult
    public static func limit() -> Bool {
        #if canImport(Glibc)
        if getenv("MALLOC_ARENA_MAX") != nil { return true }
        return mallopt(M_ARENA_MAX, maximum) == 1
        #else
        return false
        #endif
    }
}

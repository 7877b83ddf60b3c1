#if canImport(Glibc)
import Glibc

/// One test of the running test binary, run again in a child process: for what needs a process of its
/// own (a peer across a socket, a heap no earlier test has touched).
public enum ChildTestProcess {
    public struct SpawnFailed: Error, CustomStringConvertible {
        public let code: Int32
        public var description: String { "spawning the child test process: error \(code)" }
    }

    /// Starts `test` (`Module.Class/testMethod`) of this test binary with only `environment` and a
    /// minimal PATH, its standard output and error written to `output`. The caller waits for it.
    public static func spawn(_ test: String, environment: [String], output: String = "/dev/null") throws -> pid_t {
        guard let resolved = realpath("/proc/self/exe", nil) else { throw SpawnFailed(code: errno) }
        let exe = String(cString: resolved)
        free(resolved)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid: pid_t = 0
        let rc = withCStrings([exe, test]) { argv in
            withCStrings(environment + ["PATH=/usr/bin:/bin"]) { envp in posix_spawn(&pid, exe, &actions, nil, argv, envp) }
        }
        guard rc == 0 else { throw SpawnFailed(code: rc) }
        return pid
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) }
        defer { pointers.forEach { free($0) } }
        return body(pointers + [nil])
    }
}
#endif

import ClickerWire
import PrivateFiles

/// The device's long-lived key, created on first use and kept (mode 0600) in the state directory.
public enum DeviceIdentity {
    static let file = "device-key"

    /// ``loadOrCreate(in:)`` on a thread of its own (it may fsync a new key file).
    public static func load(in state: StateDirectory) async throws -> DeviceKey {
        try await BlockingWorker(label: "clicker.voter.key").run { try loadOrCreate(in: state) }
    }

    /// Loads the device key, creating it on first use. Blocks on file I/O.
    public static func loadOrCreate(in state: StateDirectory) throws -> DeviceKey {
        // Under a lock: two first runs at once must not each make (and one then lose) a key.
        try state.withLock(lock) { try loadOrCreateLocked(in: state) }
    }

    static let lock = "device-key.lock"

    /// The key file's text: the encoded key and one newline.
    static func fileText(_ key: DeviceKey) -> String {
        key.encoded.hasSuffix("\n") ? key.encoded : key.encoded + "\n"
    }

    private static func loadOrCreateLocked(in state: StateDirectory) throws -> DeviceKey {
        // Any failure to read (permissions, a directory, a symbolic link) is an error: a new key
        // here would silently change the student's enrolled identity.
        if let bytes = try state.read(file) {
            let text = String(decoding: bytes, as: UTF8.self)
            // Exactly the file we write: one line, one newline; anything else is damage.
            guard let key = try? DeviceKey(encoded: text.trimmingWhitespace()), fileText(key) == text else {
                throw VoterStateError.corrupt(state.path + "/" + file)
            }
            return key
        }
        let key = DeviceKey.generate()
        try state.write(file, Array(fileText(key).utf8))
        return key
    }
}



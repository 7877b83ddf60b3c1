import ClickerSim
import ClickerWire
import Foundation
import Glibc
import PrivateFiles
import Synchronization
@testable import Voter
import XCTest

/// The voter's state directory, device key and sequence file, against hostile and damaged disks.
final class StateFileTests: XCTestCase {
    func tempState() -> StateDirectory {
        StateDirectory(path: NSTemporaryDirectory() + "clicker-state-\(UUID().uuidString)/clicker")
    }

    // MARK: Sequence file

    /// 300 other polls are stored, then a poll whose key sorts first: its entry must survive, so a
    /// restarted voter continues at 2 and never seals sequence 1 twice.
    func test300StoredPollsThenARestartStillContinueTheSequence() throws {
        let state = tempState()
        let store = SequenceStore(state: state)
        for i in 0..<300 { _ = try store.claim(poll: "a-\(1000 + i)-1", question: 1, answer: [1, 0, 0]) }
        XCTAssertEqual(try store.claim(poll: "a-1-1", question: 1, answer: [1, 0, 0]), 1)
        let restarted = SequenceStore(state: state)
        XCTAssertEqual(try restarted.claim(poll: "a-1-1", question: 1, answer: [1, 0, 2]), 2)
        let book = try restarted.load()
        XCTAssertEqual(book.entries.count, 256, "the file stays bounded")
        XCTAssertEqual(book.entries.last?.poll, "a-1-1", "the newest entry is kept")
        XCTAssertFalse(book.entries.contains { $0.poll == "a-1000-1" }, "the oldest polls are forgotten first")
    }

    /// A voter killed (kill -9) between creating the temporary copy of the sequence file and renaming
    /// it leaves `sequences.tmp.XXXXXX` behind, as mkstemp made it: the next voter to start removes it,
    /// under the file's lock, and nothing else.
    func testATemporaryCopyLeftByAKilledVoterIsRemovedAtTheNextStart() throws {
        let state = tempState()
        try state.create()
        _ = try SequenceStore(state: state).claim(poll: "a-7-1", question: 1, answer: [1, 0, 0])
        var template = Array((state.path + "/sequences.tmp.XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        XCTAssertGreaterThanOrEqual(fd, 0)
        _ = write(fd, "a-7-1 1 1", 9)
        close(fd)
        let leftover = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let others = ["key.tmp.ABCDEF", "sequences.tmp.long-name", "sequences.old"].map { state.path + "/" + $0 }
        for o in others { XCTAssertTrue(FileManager.default.createFile(atPath: o, contents: Data([1]))) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: leftover))

        XCTAssertEqual(try SequenceStore(state: state).claim(poll: "a-7-1", question: 1, answer: [1, 0, 1]), 2)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover), "the killed voter's copy is still there")
        for o in others { XCTAssertTrue(FileManager.default.fileExists(atPath: o), "\(o) is not a leftover of the sequence file") }
    }

    static let killChildEnv = "CLICKER_SEQUENCE_KILL_CHILD_STATE"

    /// The child of `testAVoterKilledWhileItWritesItsSequenceFileLeavesACopyTheNextClaimRemoves`: it
    /// claims a new sequence in one poll again and again, as a voter whose answer changes, until it
    /// is killed (at most 20 s, so that it never outlives a parent that failed). Does nothing unless
    /// started by that test.
    func testSequenceWriterChildEntryPoint() throws {
        guard let path = ProcessInfo.processInfo.environment[Self.killChildEnv] else { return }
        let store = SequenceStore(state: StateDirectory(path: path))
        _ = try store.claim(poll: "a-7-1", question: 1, answer: [1, 0, 0])
        FileHandle.standardOutput.write(Data("READY\n".utf8))
        let end = Date().addingTimeInterval(20)
        var n: UInt8 = 1
        while Date() < end {
            _ = try store.claim(poll: "a-7-1", question: 1, answer: [1, 0, n & 1])
            n &+= 1
        }
    }

    /// A voter process killed with SIGKILL while it writes its sequence file leaves its temporary
    /// copy (`sequences.tmp.XXXXXX`); the next claim removes it and continues the sequence. The child
    /// writes in a loop and is killed the moment a copy is in the directory; a kill that lands after
    /// the rename leaves none, and another child is started (at most 20).
    func testAVoterKilledWhileItWritesItsSequenceFileLeavesACopyTheNextClaimRemoves() throws {
        let state = tempState()
        try state.create()
        addTeardownBlock { try? FileManager.default.removeItem(atPath: (state.path as NSString).deletingLastPathComponent) }
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        func copies() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: state.path)) ?? []).filter { $0.hasPrefix("sequences.tmp.") }
        }
        var left: [String] = []
        var children = 0
        while left.isEmpty, children < 20 {
            children += 1
            let child = Process()
            child.executableURL = URL(fileURLWithPath: exe)
            child.arguments = ["VoterTests.StateFileTests/testSequenceWriterChildEntryPoint"]
            var env = ProcessInfo.processInfo.environment
            env[Self.killChildEnv] = state.path
            child.environment = env
            let pipe = Pipe()
            child.standardOutput = pipe
            child.standardError = FileHandle.nullDevice
            try child.run()
            defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
            var out = Data()
            while !String(decoding: out, as: UTF8.self).contains("READY\n") {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                out.append(chunk)
            }
            XCTAssertTrue(child.isRunning, "the writer ended before it was killed (child \(children))")
            let spin = Date().addingTimeInterval(5)
            while copies().isEmpty, Date() < spin {}
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            XCTAssertEqual(child.terminationReason, .uncaughtSignal)
            XCTAssertEqual(child.terminationStatus, SIGKILL)
            left = copies()
        }
        XCTAssertFalse(left.isEmpty, "\(children) writers killed, none left a temporary copy")
        print("killed \(children) writer(s) to leave \(left)")
        let stored = try XCTUnwrap(SequenceStore(state: state).load().entries.first { $0.poll == "a-7-1" }).sequence
        XCTAssertEqual(try SequenceStore(state: state).claim(poll: "a-7-1", question: 1, answer: [1, 0, 2]), stored + 1)
        XCTAssertEqual(copies(), [], "the killed writer's copy is still there")
    }

    /// The sequence file remembers 256 polls: a poll's counter continues after 255 later polls, and
    /// the 256th forgets it, so that a ballot for it would start again at 1.
    func testAPollIsRememberedFor255LaterPollsThenForgotten() throws {
        let store = SequenceStore(state: tempState())
        XCTAssertEqual(try store.claim(poll: "a-1-1", question: 1, answer: [1, 0, 0]), 1)
        for i in 0..<255 { _ = try store.claim(poll: "a-\(1000 + i)-1", question: 1, answer: [1, 0, 0]) }
        XCTAssertEqual(try store.claim(poll: "a-1-1", question: 1, answer: [1, 0, 1]), 2, "remembered after 255 later polls")
        for i in 0..<256 { _ = try store.claim(poll: "a-\(2000 + i)-1", question: 1, answer: [1, 0, 0]) }
        XCTAssertFalse(try store.load().entries.contains { $0.poll == "a-1-1" })
        XCTAssertEqual(try store.claim(poll: "a-1-1", question: 1, answer: [1, 0, 2]), 1, "forgotten after 256")
    }

    func testSequenceRunsPerPollAndARepeatedAnswerTakesNoNumber() {
        var book = SequenceBook()
        let a: [UInt8] = [1, 0, 0], b: [UInt8] = [1, 0, 1]
        XCTAssertEqual(try book.claim(poll: "p", question: 1, answer: a).sequence, 1)
        XCTAssertEqual(try book.claim(poll: "p", question: 1, answer: a).sequence, 1, "same ballot again")
        XCTAssertEqual(try book.claim(poll: "p", question: 1, answer: b).sequence, 2, "changed answer")
        XCTAssertEqual(try book.claim(poll: "p", question: 2, answer: b).sequence, 3, "next question continues the poll's counter")
        XCTAssertEqual(try book.claim(poll: "p", question: 1, answer: b).sequence, 4, "back to question 1 is a new ballot")
        XCTAssertEqual(try book.claim(poll: "q", question: 1, answer: a).sequence, 1, "another poll starts at 1")
        XCTAssertEqual(try SequenceBook(parsing: "4821/1/305419896 7\n").entries, [], "protocol-1 lines are dropped")
        XCTAssertEqual(try SequenceBook(parsing: book.text), book, "the file format reads back")
    }

    func testExhaustedSequenceIsAnError() throws {
        var book = try SequenceBook(parsing: "p 65535 1 010000\n")
        XCTAssertThrowsError(try book.claim(poll: "p", question: 1, answer: [1, 0, 1])) {
            XCTAssertEqual($0 as? VoterError, .sequenceExhausted)
        }
    }

    /// Two writers (as two `clicker-vote` processes would: each opens the lock file itself, and flock
    /// locks belong to the open file description) claim 100 new ballots each in one poll: every
    /// number is handed out once and none is lost.
    func testTwoConcurrentWritersDoNotLoseAnUpdate() throws {
        let state = tempState()
        try state.create()
        let results = Mutex<[UInt16]>([])
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        for t in 0..<2 {
            done.enter()
            Thread {
                let store = SequenceStore(state: state)
                for q in 0..<100 {
                    do {
                        let s = try store.claim(poll: "a-7-1", question: UInt8(q), answer: [1, 0, UInt8(t)])
                        results.withLock { $0.append(s) }
                    } catch { failures.withLock { $0.append("\(error)") } }
                }
                done.leave()
            }.start()
        }
        done.wait()
        XCTAssertEqual(failures.withLock { $0 }, [])
        let all = results.withLock { $0 }.sorted()
        XCTAssertEqual(all, (1...200).map { UInt16($0) }, "each sequence handed out exactly once")
        XCTAssertEqual(try SequenceStore(state: state).load().entries.first?.sequence, 200)
    }

    /// Two first runs at once (each thread opens the lock file itself, as two processes would):
    /// both get the one key that stays on disk.
    func testConcurrentFirstRunsAgreeOnOneDeviceKey() throws {
        for _ in 0..<20 {
            let state = tempState()
            try state.create()
            let keys = Mutex<[String]>([])
            let done = DispatchGroup()
            for _ in 0..<2 {
                done.enter()
                Thread {
                    let k = (try? DeviceIdentity.loadOrCreate(in: state).encoded) ?? "error"
                    keys.withLock { $0.append(k) }
                    done.leave()
                }.start()
            }
            done.wait()
            let onDisk = try DeviceIdentity.loadOrCreate(in: state).encoded
            XCTAssertEqual(keys.withLock { $0 }, [onDisk, onDisk])
        }
    }

    func testUnreadableSequenceFileIsAClearErrorNotAnEmptyHistory() throws {
        let state = tempState()
        try state.create()
        XCTAssertEqual(mkdir(state.path + "/sequences", 0o700), 0)  // EISDIR on read
        XCTAssertThrowsError(try SequenceStore(state: state).claim(poll: "p", question: 1, answer: [1, 0, 0])) {
            XCTAssertEqual($0 as? PrivateFileError, .cannotRead(state.path + "/sequences", errno: EISDIR))
            XCTAssertTrue("\($0)".contains("Is a directory"), "\($0)")
        }
    }

    func testPermissionDeniedSequenceFileIsAClearError() throws {
        try XCTSkipIf(geteuid() == 0, "root reads a mode-000 file; EACCES cannot happen")
        let state = tempState()
        _ = try SequenceStore(state: state).claim(poll: "p", question: 1, answer: [1, 0, 0])
        XCTAssertEqual(chmod(state.path + "/sequences", 0), 0)
        XCTAssertThrowsError(try SequenceStore(state: state).claim(poll: "p", question: 1, answer: [1, 0, 1])) {
            XCTAssertEqual($0 as? PrivateFileError, .cannotRead(state.path + "/sequences", errno: EACCES))
        }
    }

    func testDamagedSequenceLineIsNamedNotSkipped() throws {
        let state = tempState()
        try state.write("sequences", Array("a-1-2 3 1 010000\na-1-3 x 1 010000\n".utf8))
        XCTAssertThrowsError(try SequenceStore(state: state).claim(poll: "p", question: 1, answer: [1, 0, 0])) {
            XCTAssertEqual($0 as? VoterStateError, .damagedSequences(state.path + "/sequences", line: 2))
        }
    }

    // MARK: State directory

    func testNoHomeIsAClearErrorNotTmp() {
        XCTAssertThrowsError(try StateDirectory.standard(environment: [:])) {
            XCTAssertEqual($0 as? VoterStateError, .noStateDirectory)
            XCTAssertTrue("\($0)".contains("XDG_STATE_HOME") && "\($0)".contains("HOME"))
        }
        XCTAssertThrowsError(try StateDirectory.standard(environment: ["HOME": "", "XDG_STATE_HOME": "relative"]))
        XCTAssertEqual(try StateDirectory.standard(environment: ["HOME": "/home/s"]).path, "/home/s/.local/state/clicker")
    }

    func testStateDirectoryOpenToOthersIsRefused() throws {
        let state = tempState()
        try state.create()
        XCTAssertEqual(chmod(state.path, 0o755), 0)
        XCTAssertThrowsError(try DeviceIdentity.loadOrCreate(in: state)) {
            XCTAssertEqual($0 as? PrivateFileError, .tooOpen(state.path, mode: UInt32(S_IFDIR) | 0o755))
        }
        XCTAssertNil(try? PrivateFiles.read(state.path + "/device-key") ?? nil, "no key was made")
    }

    func testStateDirectoryOfAnotherUserIsRefused() throws {
        let state = tempState()
        try state.create()
        if geteuid() == 0 {
            XCTAssertEqual(chown(state.path, 65534, 65534), 0)
        } else {
            // Not root: a directory someone else owns stands in.
            return XCTAssertThrowsError(try StateDirectory(path: "/usr").create()) {
                guard case .wrongOwner = $0 as? PrivateFileError else { return XCTFail("\($0)") }
            }
        }
        XCTAssertThrowsError(try DeviceIdentity.loadOrCreate(in: state)) {
            XCTAssertEqual($0 as? PrivateFileError, .wrongOwner(state.path, owner: 65534, expected: 0))
        }
    }

    func testSymlinkedStateDirectoryIsRefused() throws {
        let real = tempState()
        try real.create()
        let link = StateDirectory(path: NSTemporaryDirectory() + "clicker-link-\(UUID().uuidString)")
        XCTAssertEqual(symlink(real.path, link.path), 0)
        XCTAssertThrowsError(try DeviceIdentity.loadOrCreate(in: link)) {
            XCTAssertEqual($0 as? PrivateFileError, .symlink(link.path))
        }
    }

    /// Another user planted a symbolic link as the key file: it is neither followed nor replaced by a new key.
    func testSymlinkedKeyFileIsRefused() throws {
        let state = tempState()
        try state.create()
        let planted = NSTemporaryDirectory() + "planted-\(UUID().uuidString)"
        try PrivateFiles.write(planted, Array("clicker-device-key-v1 \(String(repeating: "ab", count: 32))\n".utf8))
        XCTAssertEqual(symlink(planted, state.path + "/device-key"), 0)
        XCTAssertThrowsError(try DeviceIdentity.loadOrCreate(in: state)) {
            XCTAssertEqual($0 as? PrivateFileError, .symlink(state.path + "/device-key"))
        }
    }

    /// Another local user plants a symbolic link where a predictable temporary name would be
    /// (`device-key.tmp.<pid>`, as earlier versions used): the key is written elsewhere (mkstemp's
    /// random name, O_EXCL) and the link's target is left alone.
    func testPlantedTemporaryFileLinkIsNotFollowed() throws {
        let state = tempState()
        try state.create()
        let victim = NSTemporaryDirectory() + "victim-\(UUID().uuidString)"
        XCTAssertTrue(FileManager.default.createFile(atPath: victim, contents: Data("victim".utf8)))
        XCTAssertEqual(symlink(victim, state.path + "/device-key.tmp.\(getpid())"), 0)
        let key = try DeviceIdentity.loadOrCreate(in: state)
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "victim")
        XCTAssertEqual(try DeviceIdentity.loadOrCreate(in: state), key)
    }

    func testUnreadableKeyFileIsAnErrorNeverANewKey() throws {
        let state = tempState()
        try state.create()
        XCTAssertEqual(mkdir(state.path + "/device-key", 0o700), 0)
        XCTAssertThrowsError(try DeviceIdentity.loadOrCreate(in: state)) {
            XCTAssertEqual($0 as? PrivateFileError, .cannotRead(state.path + "/device-key", errno: EISDIR))
        }
        var st = stat()
        XCTAssertEqual(lstat(state.path + "/device-key", &st), 0)
        XCTAssertEqual(UInt32(st.st_mode) & UInt32(S_IFMT), UInt32(S_IFDIR), "nothing was written over it")
    }

    func testMalformedKeyFileIsAnError() throws {
        let state = tempState()
        let good = DeviceIdentity.fileText(try DeviceIdentity.loadOrCreate(in: state)).trimmingWhitespace()
        for bad in [good, good + "\n\n", "x" + good + "\n", String(good.dropLast()) + "\n", "\n" + good + "\n"] {
            try state.write("device-key", Array(bad.utf8))
            XCTAssertThrowsError(try DeviceIdentity.loadOrCreate(in: state), bad) {
                XCTAssertEqual($0 as? VoterStateError, .corrupt(state.path + "/device-key"))
            }
        }
    }

    // MARK: Private writer

    func testWriteDoesNotKeepTheModeOfAnExistingFile() throws {
        let path = NSTemporaryDirectory() + "private-\(UUID().uuidString)"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("old".utf8)))
        XCTAssertEqual(chmod(path, 0o666), 0)
        try PrivateFiles.write(path, Array("secret".utf8))
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(try PrivateFiles.read(path), Array("secret".utf8))
    }

    func testWriteReplacesASymlinkInsteadOfFollowingIt() throws {
        let target = NSTemporaryDirectory() + "target-\(UUID().uuidString)"
        let path = NSTemporaryDirectory() + "link-\(UUID().uuidString)"
        XCTAssertTrue(FileManager.default.createFile(atPath: target, contents: Data("victim".utf8)))
        XCTAssertEqual(symlink(target, path), 0)
        try PrivateFiles.write(path, Array("new".utf8))
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "victim")
        var st = stat()
        XCTAssertEqual(lstat(path, &st), 0)
        XCTAssertEqual(UInt32(st.st_mode) & UInt32(S_IFMT), UInt32(S_IFREG))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())
            .filter { $0.hasPrefix((path as NSString).lastPathComponent + ".tmp.") }
        XCTAssertEqual(leftovers, [], "no temporary file is left behind")
    }
}

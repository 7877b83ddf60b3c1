import Glibc
import PrivateFiles

/// Why a following voter's ballot is not on the air although the student answered: its sequence
/// cannot be saved (a full or broken state directory; a ballot is sealed only once its sequence is
/// on disk, PROTOCOL.md §7), or the radio refuses to advertise (it went away). While it lasts the
/// voter never shows "sending"; it says this once, and shows its status again once the ballot is
/// on the air.
public struct NotSending: Error, Sendable, Hashable {
    public enum Cause: String, Sendable, Hashable {
        /// The state directory has no space left (ENOSPC, EDQUOT).
        case stateFull = "state-directory-full"
        /// The state directory or its sequence file cannot be written or read otherwise.
        case stateUnusable = "state-directory-unusable"
        /// The radio refused to advertise.
        case radio = "radio-unavailable"
    }

    public var cause: Cause
    /// The error, as the system or the radio worded it.
    public var detail: String

    public init(cause: Cause, detail: String) {
        self.cause = cause
        self.detail = detail
    }

    /// Why `error`, thrown while a ballot was being cast or advertised, keeps it off the air.
    public init(_ error: any Error) {
        let detail = "\(error)"
        switch error {
        case PrivateFileError.cannotWrite(_, let e) where e == ENOSPC || e == EDQUOT:
            self.init(cause: .stateFull, detail: detail)
        case is PrivateFileError, is VoterStateError:
            self.init(cause: .stateUnusable, detail: detail)
        default:
            self.init(cause: .radio, detail: detail)
        }
    }

    /// The stable line for scripts: `not-sending state-directory-full`.
    public var line: String { "not-sending " + cause.rawValue }

    /// What a person at a terminal reads.
    public var sentence: String {
        switch cause {
        case .stateFull:
            return "NOT SENT: the disk holding this device's state is full (\(detail)). Free some space: "
                + "the answer is sent as soon as its number can be saved."
        case .stateUnusable:
            return "NOT SENT: this device's state cannot be saved (\(detail)). The answer is sent as soon as it can."
        case .radio:
            return "NOT SENT: the radio cannot advertise (\(detail)). The answer is sent as soon as it can."
        }
    }
}

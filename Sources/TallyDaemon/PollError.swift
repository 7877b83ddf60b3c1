import Foundation

/// Errors of poll control, worded for the person at the keyboard.
public enum PollError: Error, Sendable, Equatable, CustomStringConvertible {
    case questionAlreadyOpen(Int)
    case noOpenQuestion
    case lastQuestion
    case storage(String)
    /// `--join-code` names a code the database already holds (vote ID and poll ID, never the secret).
    case joinCodeUsed(voteID: UInt16, poll: Int64)
    /// `--resume` with no open poll in the database.
    case nothingToResume
    /// `--resume` of a poll that started longer ago than the limit.
    case pollTooOld(age: Duration, limit: Duration)
    /// `--resume` without a database.
    case resumeNeedsStore
    /// `--resume` with or without `--roster` where the open poll is the other kind.
    case resumeModeMismatch(openIsRoster: Bool)
    /// Reopening a closed question of an anonymous poll: only its totals were kept.
    case questionSealed(Int)
    /// `--resume` with a flag that says otherwise than the stored poll.
    case resumeContradicts(flag: String, stored: String)
    /// The system refused the thread the poll runs on.
    case threadUnavailable
    /// `n` after the last question of the set.
    case endOfQuestionSet(count: Int)
    /// An ad-hoc question while the set has questions left.
    case questionSetNotFinished(next: Int, count: Int)
    /// `--question N` beyond the set.
    case notInQuestionSet(question: Int, count: Int)

    public var description: String {
        switch self {
        case .questionAlreadyOpen(let q): "question \(q) is already open"
        case .noOpenQuestion: "no question is open"
        case .lastQuestion: "there is no question after 255"
        case .storage(let why): "storage: \(why)"
        case let .joinCodeUsed(voteID, poll):
            "the join code for vote \(voteID) was already used by poll \(poll): a join code is never used twice, because "
                + "the ballots sent for that poll would count in the new one. Leave out --join-code to get a fresh code, "
                + "or continue the open poll with --resume"
        case .nothingToResume: "there is no open poll to resume: run without --resume to start a new poll"
        case let .pollTooOld(age, limit):
            "the open poll started \(Self.hours(age)) ago, more than the \(Self.hours(limit)) that --resume allows "
                + "(--resume-limit): run without --resume to start a new poll with a fresh join code"
        case .resumeNeedsStore: "--resume needs the database (drop --no-store)"
        case .resumeModeMismatch(let roster):
            roster ? "the open poll is a roster poll: resume it with --roster"
                : "the open poll is anonymous: resume it without --roster"
        case let .resumeContradicts(flag, stored):
            "\(flag) contradicts the open poll, which \(stored): --resume continues it as stored, so leave the flag out "
                + "(or run without --resume to start a new poll)"
        case .questionSealed(let q):
            "question \(q) of this anonymous poll is closed for good: its per-voter ballots were discarded when it "
                + "closed and only its totals are kept; open the next question to ask again"
        case .threadUnavailable: "cannot start the poll's thread: the system refused a new thread"
        case .endOfQuestionSet(let n):
            "question \(n) was the last of the question set: close it, export, or ask an ad-hoc question "
                + "(clicker-tally next --kind …)"
        case let .questionSetNotFinished(next, count):
            "the question set has questions left (question \(next) of \(count) comes next): ad-hoc questions follow "
                + "its last question"
        case let .notInQuestionSet(q, count): "the question set has \(count) questions: there is no question \(q)"
        }
    }

    static func hours(_ d: Duration) -> String {
        let tenths = Int((Double(d.components.seconds) / 360).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10) hours" : "\(tenths / 10).\(tenths % 10) hours"
    }
}

import ClickerStore
import ClickerTally
import ClickerWire
import Foundation
import PrivateFiles

/// How a poll is run.
public struct PollOptions: Sendable {
    public var joinCode: JoinCode
    /// The class list (roster mode): only its students are counted; anonymous ballots are kept
    /// apart as "unregistered". Nil for anonymous polls.
    public var roster: Roster?
    public var policy: ChangePolicy
    /// Answers offered per question (A…).
    public var options: Int
    /// The question opened when the poll starts.
    public var firstQuestion: UInt8
    /// Read anonymous ballots back over GATT and verify their signature (PROTOCOL.md §7, §8.3).
    public var confirmByGATT: Bool
    public var gattTimeout: Duration
    /// GATT reads in flight at once (controllers allow only a few connections).
    public var maxConcurrentReads: Int
    public var title: String?
    /// When live counts of an open question move (see `PublishRule`); final results are exact.
    public var publishRule = PublishRule()

    public init(joinCode: JoinCode, roster: Roster? = nil,
                policy: ChangePolicy = .latestWins, options: Int = 4, firstQuestion: UInt8 = 1,
                confirmByGATT: Bool = true, gattTimeout: Duration = .seconds(10), maxConcurrentReads: Int = 2,
                title: String? = nil) {
        self.joinCode = joinCode
        self.roster = roster
        self.policy = policy
        self.options = options
        self.firstQuestion = firstQuestion
        self.confirmByGATT = confirmByGATT
        self.gattTimeout = gattTimeout
        self.maxConcurrentReads = maxConcurrentReads
        self.title = title
    }
}

/// Writes a file readable by its owner only (fresh 0600 file renamed into place, whatever was there).
func writePrivate(_ path: String, _ text: String) throws {
    do { try PrivateFiles.write(path, Array(text.utf8)) } catch { throw PollError.storage("\(error)") }
}

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
        }
    }

    static func hours(_ d: Duration) -> String {
        let tenths = (Double(d.components.seconds) / 360).rounded()
        return tenths.truncatingRemainder(dividingBy: 10) == 0 ? "\(Int(tenths / 10)) hours" : String(format: "%.1f hours", tenths / 10)
    }
}

/// How a `PollController` starts.
public enum PollStart: Sendable, Equatable {
    /// A new poll with `PollOptions.joinCode`, which the database must not hold yet; the open poll
    /// in the database, if any, is closed first.
    case fresh
    /// Continue the open poll of the database (its join code, counting rule, mode, question
    /// definitions and ballots), refused when it started more than `maxAge` ago or when `stated`
    /// (what the command line said) contradicts it.
    case resume(maxAge: Duration, stated: ResumeFlags = ResumeFlags())

    /// The default limit of `--resume`: a poll older than a long lecture is not continued.
    public static let defaultResumeLimit: Duration = .seconds(6 * 3600)
}

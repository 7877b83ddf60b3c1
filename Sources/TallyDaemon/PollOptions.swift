import ClickerStore
import ClickerTally
import ClickerWire
import Foundation

/// How a poll is run.
public struct PollOptions: Sendable {
    public var joinCode: JoinCode
    /// The class list (roster mode): only its students are counted; anonymous ballots are kept
    /// apart as "unregistered". Nil for anonymous polls.
    public var roster: Roster?
    public var policy: ChangePolicy
    /// Answers offered (A…) by the first question when `adHoc` is nil (`--options N`), and by a
    /// question stored before definitions were kept. The current question's count is the
    /// controller's `spec.options`: it follows the questions, this does not.
    public var options: Int
    /// The question opened when the poll starts.
    public var firstQuestion: UInt8
    /// The question set the poll follows (`--questions`): questions 1…n in order, `n` opens the next.
    /// Empty when questions are asked ad hoc.
    public var questionSet: [QuestionSpec] = []
    /// The ad-hoc question asked first (`--kind`, `--options`, `--title`, `--range`); nil: a single
    /// choice of `options` letters. Later ad-hoc questions keep its kind and options.
    public var adHoc: QuestionSpec?
    /// Read anonymous ballots back over GATT and verify their signature (PROTOCOL.md §7, §8.3).
    public var confirmByGATT: Bool
    /// How long a GATT read may take, from its request: long enough for the advertising event that
    /// the connection waits for of a voter at the keep-alive (10.24 s), plus the exchange.
    public var gattTimeout: Duration
    /// The default ``gattTimeout``: the keep-alive and 2 s.
    public static let defaultGATTTimeout: Duration = BeaconInterval.keepAlive + .seconds(2)
    /// GATT reads in flight at once (controllers allow only a few connections).
    public var maxConcurrentReads: Int
    public var title: String?
    /// When live counts of an open question move (see `PublishRule`); final results are exact.
    public var publishRule = PublishRule()
    /// When to broadcast the poll's beacon (docs/PROTOCOL.md §11.11).
    public var beacon = BeaconMode.whenPossible
    /// The poll's beacon key pair, to which the join code's secret commits (docs/PROTOCOL.md §11.2,
    /// version 4): the beacon signs its extended frames with it. Nil when the join code was given by
    /// hand or the poll was created before version 4: the beacon then sends tagged frames only.
    public var beaconSigner: BeaconSigner?

    public init(joinCode: JoinCode, roster: Roster? = nil,
                policy: ChangePolicy = .latestWins, options: Int = 4, firstQuestion: UInt8 = 1,
                confirmByGATT: Bool = true, gattTimeout: Duration = PollOptions.defaultGATTTimeout, maxConcurrentReads: Int = 2,
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

    /// The question the poll opens first: `firstQuestion` of the set, else the ad-hoc one.
    public var firstSpec: QuestionSpec {
        if !questionSet.isEmpty {
            let i = Int(firstQuestion) - 1
            return questionSet.indices.contains(i) ? questionSet[i] : questionSet[0]
        }
        var spec = adHoc ?? .choice(firstQuestion, options: options)
        spec.number = firstQuestion
        return spec
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

/// When the tally broadcasts its beacon.
public enum BeaconMode: Sendable, Hashable {
    /// When the radio can broadcast while it scans (`BroadcastCapabilities.whileScanning`); otherwise the
    /// beacon stays off and the screen says so (voters then need `--question N`). The default.
    case whenPossible
    /// Whatever the radio says it can: a refusal is logged and tried again.
    case always
    case off
}

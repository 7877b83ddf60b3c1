import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation

/// The controller's beacon (docs/PROTOCOL.md §11.11): what it broadcasts while the radio can, and the
/// beacon frames its own scanner hears.
struct BeaconRuntime: Sendable {
    /// The poll's beacon key (derived with the poll's other keys; cheap, no scrypt).
    var key: BeaconKey
    /// The poll's beacon key pair (version 4), which signs extended frames; nil: tagged frames only.
    var signer: BeaconSigner?
    /// Acknowledgements, load estimate, composer: set while the radio broadcasts.
    var tally: TallyBeacon?
    /// STATE frames this tally sealed lately, oldest first (heard again, they are not forgeries).
    var sealed: [[UInt8]] = []
    var sealedSet: Set<[UInt8]> = []
    static let sealedLimit = 256
    /// Authentic STATE frames of this poll that this tally did not seal, when the last one came, and
    /// the question the tally showed then.
    var forgeries = 0
    var lastForgery: Date?
    var forgedDuring: UInt8?
    /// Beacon frames heard by the scanner (own, another tally's, forged): none of them is a ballot.
    var framesHeard = 0
    /// Signature verifications of heard STATE frames on the controller's actor.
    var signatureChecks = 0
    /// Tag checks of STATE frames left in this second (a flood of frames with our vote ID costs at most
    /// this many HMACs a second), and the second they are for.
    var checksLeft = 0
    var checkSecond: UInt64 = .max
    static let checksPerSecond = 200
    /// Something the voters must hear at once changed (question, phase): compose now.
    var changed = true
    /// Wakes the broadcasting task (set once it has started).
    var turns: BeaconTurns?
    /// The radio that broadcasts, and what it can.
    var radio: (any BroadcasterTransport)?
    var capabilities: BroadcastCapabilities?
    /// The closed STATE frame of the poll this one replaced, sent along until `until`.
    var farewell: (frame: [UInt8], until: Date)?
    /// Payloads handed to the radio, and the last broadcast error.
    var payloads = 0
    var lastError: String?
    /// Why the beacon stays off although it was wanted (the radio cannot broadcast while it scans).
    var off: String?

    init(secret: PollSecret, signer: BeaconSigner? = nil) {
        key = BeaconKey(secret)
        self.signer = signer
    }

    /// Notes a counted ballot heard again or for the first time (``TallyBeacon/counted(_:question:sequence:at:)``),
    /// in place; true when it made the first news since the last payload, so that the broadcaster is woken
    /// once per payload's worth of news, not per report. A mutating method, so that the report path never
    /// copies this struct (reading `tally` through the controller's stored property did, for every report).
    mutating func counted(_ voter: VoterKey, question: UInt8, sequence: UInt16, at ns: UInt64) -> Bool {
        guard case .some = tally else { return false }
        let had = tally?.hasPending ?? false
        tally?.counted(voter, question: question, sequence: sequence, at: ns)
        return !had && tally?.hasPending == true
    }

    /// A ballot of this poll whose voter the tally has no key for: counted in the load, in place.
    mutating func heardUncountable(voterID: UInt32, question: UInt8, at ns: UInt64) {
        tally?.heardUncountable(voterID: voterID, question: question, at: ns)
    }

    mutating func remember(_ state: [UInt8]) {
        guard sealedSet.insert(state).inserted else { return }
        sealed.append(state)
        if sealed.count > Self.sealedLimit { sealedSet.remove(sealed.removeFirst()) }
    }
}

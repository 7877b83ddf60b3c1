#if canImport(FoundationEssentials)
import FoundationEssentials   // not Foundation: clicker-vote links no ICU
#else
import Foundation
#endif

/// The doctor's report for scripts (`doctor --json`): one object, its keys always present (null where not
/// known) and sorted. Keys: role, radio, canRun, exitStatus, problems, advice, bluetoothd {version, source},
/// access {state: allowed|denied|unknown, detail}, adapter (the one used, or null), adapters [{name, address,
/// powered, advertising, extendedAdvertising, maxAdvertisingLength, features}], broadcastWhileScanning and
/// extendedFrames {state: worked|failed|notTried, detail}, beacon (extended|legacy|off; null where the program cannot run, and on raw HCI), frameLength,
/// figures [{voters, seconds99, seconds100, countedAtEnd, shownWithinOneSecond}], tallyHeard, listenedSeconds.
extension DoctorReport {
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(JSONForm(self)) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A state and its detail: {"state": "...", "detail": "..." or null}.
struct StateDetail: Encodable {
    var state: String
    var detail: String?

    init(_ a: DoctorFindings.Access) {
        switch a {
        case .allowed: (state, detail) = ("allowed", nil)
        case .denied(let why): (state, detail) = ("denied", why)
        case .unknown: (state, detail) = ("unknown", nil)
        }
    }

    init(_ t: DoctorFindings.Trial) {
        switch t {
        case .worked: (state, detail) = ("worked", nil)
        case .failed(let why): (state, detail) = ("failed", why)
        case .notTried(let why): (state, detail) = ("notTried", why)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(state, forKey: .state)
        try c.encode(detail, forKey: .detail)
    }

    enum Key: String, CodingKey { case state, detail }
}

struct JSONForm: Encodable {
    let report: DoctorReport
    init(_ r: DoctorReport) { report = r }

    enum Key: String, CodingKey {
        case role, radio, canRun, exitStatus, problems, advice, bluetoothd, access, adapter, adapters
        case broadcastWhileScanning, extendedFrames, beacon, frameLength, figures, tallyHeard, listenedSeconds
    }

    enum DaemonKey: String, CodingKey { case version, source }
    enum AdapterKey: String, CodingKey { case name, address, powered, advertising, extendedAdvertising, maxAdvertisingLength, features }
    enum FigureKey: String, CodingKey { case voters, seconds99, seconds100, countedAtEnd, shownWithinOneSecond }

    func encode(to encoder: any Encoder) throws {
        let f = report.findings
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(f.role.rawValue, forKey: .role)
        try c.encode(f.radio, forKey: .radio)
        try c.encode(report.canRun, forKey: .canRun)
        try c.encode(report.exitStatus, forKey: .exitStatus)
        try c.encode(report.problems, forKey: .problems)
        try c.encode(report.advice, forKey: .advice)
        var d = c.nestedContainer(keyedBy: DaemonKey.self, forKey: .bluetoothd)
        try d.encode(f.bluetoothd.version, forKey: .version)
        try d.encode(f.bluetoothd.source, forKey: .source)
        try c.encode(StateDetail(f.access), forKey: .access)
        try c.encode(f.chosen, forKey: .adapter)
        var list = c.nestedUnkeyedContainer(forKey: .adapters)
        for a in f.adapters {
            var e = list.nestedContainer(keyedBy: AdapterKey.self)
            try e.encode(a.name, forKey: .name)
            try e.encode(a.address, forKey: .address)
            try e.encode(a.powered, forKey: .powered)
            try e.encode(a.advertising, forKey: .advertising)
            try e.encode(a.extendedAdvertising, forKey: .extendedAdvertising)
            try e.encode(a.maxAdvertisingLength, forKey: .maxAdvertisingLength)
            try e.encode(a.features, forKey: .features)
        }
        try c.encode(StateDetail(f.broadcastWhileScanning), forKey: .broadcastWhileScanning)
        try c.encode(StateDetail(f.extendedFrames), forKey: .extendedFrames)
        try c.encode(report.reach?.rawValue, forKey: .beacon)
        try c.encode(f.frameLength, forKey: .frameLength)
        var figures = c.nestedUnkeyedContainer(forKey: .figures)
        for x in report.figures {
            var e = figures.nestedContainer(keyedBy: FigureKey.self)
            try e.encode(x.voters, forKey: .voters)
            try e.encode(x.seconds99, forKey: .seconds99)
            try e.encode(x.seconds100, forKey: .seconds100)
            try e.encode(x.countedAtEnd, forKey: .countedAtEnd)
            try e.encode(x.shownWithinOneSecond, forKey: .shownWithinOneSecond)
        }
        try c.encode(f.tallyHeard, forKey: .tallyHeard)
        try c.encode(f.listenedSeconds, forKey: .listenedSeconds)
    }
}

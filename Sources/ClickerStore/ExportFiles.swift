import Foundation
import PrivateFiles

extension ClickerStore {
    /// Writes the export of a poll into `directory` (created 0700 if missing): `STEM-summary.csv`,
    /// `STEM.json`, for roster polls `STEM-ballots.csv`, with ranked questions `STEM-rounds.csv` (every
    /// instant-runoff round), and each of `extra` as `STEM-SUFFIX`
    /// (files 0600). Returns the paths written.
    ///
    /// STEM names the poll by vote ID and start (UTC), such as `poll-2285-20261123T091500Z`, so that
    /// polls of other databases exporting into the same directory never share a name. No file is
    /// ever replaced: when any of the names exists (the same poll exported before), STEM gets `-2`,
    /// `-3`, … until all of them are free.
    @discardableResult
    public func export(poll id: Int64, to directory: String,
                       adding extra: [(suffix: String, contents: String)] = []) throws -> [String] {
        guard let poll = try poll(id) else { throw StoreError.unknownPoll(id) }
        let e = try export(poll: id)
        try StoreLocation.makeDirectory(directory)
        var files: [(String, [UInt8])] = [("-summary.csv", Array(e.summaryCSV.utf8)), (".json", Array(e.json))]
        if let b = e.ballotsCSV { files.append(("-ballots.csv", Array(b.utf8))) }
        if let r = e.roundsCSV { files.append(("-rounds.csv", Array(r.utf8))) }
        files += extra.map { ("-" + $0.suffix, Array($0.contents.utf8)) }
        let stem = ExportNames.stem(poll)
        for attempt in 1...ExportNames.maxAttempts {
            let base = directory + "/" + stem + (attempt == 1 ? "" : "-\(attempt)")
            var written: [String] = []
            var taken = false
            for (suffix, bytes) in files {
                let path = base + suffix
                if try PrivateFiles.create(path, bytes) {
                    written.append(path)
                } else {
                    taken = true
                    break
                }
            }
            if !taken { return written }
            // Another export holds one of the names: this attempt's files go, the next suffix is tried.
            for path in written { unlink(path) }
        }
        throw StoreError.exportNamesTaken(directory: directory, stem: stem)
    }
}

/// The names of export files (pure).
public enum ExportNames {
    /// Exports of one poll into one directory before giving up.
    static let maxAttempts = 1000

    /// `poll-<vote ID>-<start, UTC, to the second>`, e.g. `poll-2285-20261123T091500Z`.
    public static func stem(_ poll: PollRecord) -> String {
        let t = Exporter.timestamp(poll.createdAt)  // 2026-11-23T09:15:00.123Z
        let compact = t.prefix(19).filter { $0 != "-" && $0 != ":" }
        return "poll-" + Exporter.voteIDText(poll.voteID) + "-" + compact + "Z"
    }
}

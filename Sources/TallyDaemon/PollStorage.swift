import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation

/// Storage: every accepted ballot is committed in the actor turn that tallied it, before any reader
/// sees it; a ballot that fails to commit is undone in the tally, and counts when heard again.
extension PollController {
    func record(_ b: Ballot, address: DeviceAddress, gattVerified: Bool) -> BallotRecord {
        let now = clock.date
        // Anonymous polls keep no address (the store enforces it too).
        return BallotRecord(poll: pollID ?? 0, question: Int(b.question),
                            voter: VoterKey(mode: b.mode, voterID: b.voterID).storeBytes,
                            answer: b.answer, sequence: UInt32(b.sequence),
                            address: options.roster == nil ? "" : address.description,
                            firstHeard: now, lastHeard: now, gattVerified: gattVerified)
    }

    /// Commits ballots (and pending rejection counters and key bindings) in one transaction; returns
    /// whether they were saved. Ballots that fail are not kept: the caller undoes them in the tally
    /// (`notSaved`), so that nothing unsaved is shown, exported or acknowledged, and the voter, never
    /// acknowledged, keeps sending. Once a commit failed, counting has stopped: a commit is tried
    /// again at most once per `StorageHealth.retryInterval` (or by `flush()`), and the first that
    /// succeeds resumes counting.
    @discardableResult
    func commit(_ ballots: [BallotRecord], force: Bool = false) -> Bool {
        guard let store, let pollID else { verification.newBindings.removeAll(); return true }
        let now = clock.date
        guard storage.mayCommit(at: now, force: force) else { return false }
        let counts = rejections.pendingCounts.map {
            RejectionCount(poll: pollID, question: Int($0.key.question), reason: $0.key.reason, count: $0.count)
        }
        // An empty transaction succeeds on a full disk too: only a commit that wrote something shows that
        // the store takes writes again.
        let wroteSomething = !ballots.isEmpty || !counts.isEmpty || !verification.newBindings.isEmpty
        do {
            try store.record(ballots, rejections: counts, voterKeys: verification.newBindings)
        } catch {
            storageStopped(error, at: now)
            return false
        }
        verification.newBindings.removeAll()
        for b in ballots {
            guard let key = VoterKey(storeBytes: b.voter), let q = UInt8(exactly: b.question),
                  let seq = UInt16(exactly: b.sequence) else { continue }
            committed[q, default: [:]][key] = seq
        }
        rejections.committed()
        if wroteSomething, let stopped = storage.succeeded() {
            logger.notice("counting resumed: the database accepts writes again (it failed: \(stopped))")
            version &+= 1
        }
        return true
    }

    /// A commit failed: counting stops until one succeeds (said once in the log, shown in the view).
    func storageStopped(_ error: any Error, at now: Date) {
        let reason = "\(error)"
        if storage.failed(reason, at: now) {
            logger.error("""
                counting stopped: votes cannot be saved (\(reason)); they are not shown or acknowledged, \
                and count when heard again once the database accepts writes
                """)
        }
        version &+= 1
    }

    /// Undoes in the tally a ballot that was counted but not saved: the voter's record becomes what
    /// was saved before, and the ballot counts when it is heard again and saved.
    func notSaved(_ b: Ballot, _ r: IngestResult) {
        pipeline.tally.restore(question: b.question, voter: VoterKey(mode: b.mode, voterID: b.voterID), to: r.previous)
        storage.undidBallot()
        version &+= 1
    }

    /// Commits everything pending (rejection counters, key bindings), whether or not a retry is due.
    public func flush() { commit([], force: true) }

    func storeAction(_ body: (ClickerStore, Int64) throws -> Void) throws {
        guard let store, let pollID else { return }
        do { try body(store, pollID) } catch { throw PollError.storage("\(error)") }
    }

    /// Writes the poll's CSV and JSON exports and one SVG chart per question (`STEM-qN.svg`) into
    /// `directory`; returns the file paths.
    public func export(to directory: String) throws -> [String] {
        flush()
        guard let store, let pollID else { throw PollError.storage("no database: run without --no-store to export") }
        do {
            var extra: [(suffix: String, contents: String)] = []
            if let roster = options.roster {
                extra.append((suffix: "roster.csv", contents: rosterCSV(roster)))
                if let poll = try store.poll(pollID), let book = gradebook() {
                    // Scores per student (participation, and correctness where questions have correct answers).
                    let prefix = GradebookCSV.prefix(poll)
                    extra.append((suffix: "gradebook-canvas.csv", contents: GradebookCSV.canvas(book, prefix: prefix)))
                    extra.append((suffix: "gradebook-moodle.csv", contents: GradebookCSV.moodle(book, prefix: prefix)))
                }
            }
            let files = try store.export(poll: pollID, to: directory, adding: extra + charts())
            exportedAt = clock.date
            return files
        } catch { throw PollError.storage("\(error)") }
    }

    /// One chart per question the tally knows, by number: from its results, or from its totals once
    /// an anonymous question is sealed (its voters are forgotten). Sealed totals keep the counted
    /// answers of every kind, so a sealed ranked or numeric question still gets its rounds or its
    /// histogram; totals kept before they held the answers count single choices only, so such a
    /// question of another kind gets no chart rather than empty bars.
    func charts() -> [(suffix: String, contents: String)] {
        pipeline.tally.questions.sorted { $0.key < $1.key }.compactMap { q, tally in
            let spec = tally.spec
            let chart: ResultsChart
            if let t = sealed[q] {
                guard t.answers != nil || spec.kinds == [.choice] else { return nil }
                chart = ResultsChart(question: q, title: spec.title, voters: t.voters,
                                     results: KindResults(spec: spec, counts: t.answerCounts))
            } else if let r = pipeline.tally.results(question: q) {
                chart = ResultsChart(results: r, spec: spec)
            } else {
                return nil
            }
            return (suffix: "q\(q).svg", contents: chart.svg())
        }
    }

    /// One row per enrolled student, one column per question: the counted answer, or empty.
    func rosterCSV(_ roster: Roster) -> String {
        let numbers = pipeline.tally.questions.keys.sorted()
        var columns: [[Answer?]] = []
        for q in numbers {
            guard let r = pipeline.tally.results(question: q) else { continue }
            columns.append(roster.answers(r, keyring: pipeline.keyring).map(\.answer))
        }
        var rows = [["name", "student_id"] + numbers.map { "q\($0)" }]
        for (i, e) in roster.entries.enumerated() {
            rows.append([e.name, e.studentID] + columns.map { $0[i]?.description ?? "" })
        }
        return Exporter.csv(rows)
    }
}

extension VoterKey {
    /// Stored form: mode byte, then the voter ID big-endian.
    var storeBytes: Data {
        Data([mode.rawValue, UInt8(voterID >> 24), UInt8((voterID >> 16) & 0xFF), UInt8((voterID >> 8) & 0xFF),
              UInt8(voterID & 0xFF)])
    }

    init?(storeBytes d: Data) {
        let b = [UInt8](d)
        guard b.count == 5, let mode = BallotMode(rawValue: b[0]) else { return nil }
        self.init(mode: mode, voterID: UInt32(b[1]) << 24 | UInt32(b[2]) << 16 | UInt32(b[3]) << 8 | UInt32(b[4]))
    }
}


import ClickerTally
import Foundation
import ProjectorPage
import TallyDaemon

/// Keeps a `SnapshotFanOut` up to date with a poll: woken by the poll's change notices (never by a
/// polling timer), it reads the snapshot in one turn of the controller, encodes it once and publishes
/// it when it differs from the last one.
public struct ProjectorFeed: Sendable {
    public let controller: PollController
    public let fanOut: SnapshotFanOut
    /// At most one snapshot per interval while changes arrive (the first of a burst goes at once).
    public let interval: Duration

    public init(controller: PollController, fanOut: SnapshotFanOut, interval: Duration = .milliseconds(100)) {
        self.controller = controller
        self.fanOut = fanOut
        self.interval = interval
    }

    /// The snapshot the page shows now.
    public static func snapshot(of poll: isolated PollController, now: Date = Date()) -> ProjectorSnapshot {
        reading(of: poll, now: now).snapshot
    }

    /// The snapshot the page shows now, and the counts its chart is drawn from (nil while hidden).
    static func reading(of poll: isolated PollController, now: Date = Date())
        -> (snapshot: ProjectorSnapshot, chart: ChartInput?) {
        let live = poll.liveCounts(now: now)
        let snapshot = ProjectorSnapshot(joinCode: poll.joinCode, roster: poll.options.roster != nil,
                                         spec: poll.spec, open: poll.isOpen, hidden: live.hidden,
                                         voters: live.voters, counts: live.counts)
        return (snapshot, live.hidden ? nil : ChartInput(spec: poll.spec, counts: live.counts, voters: live.voters))
    }

    /// What the page's "download SVG" chart shows: the same counts as the snapshot.
    struct ChartInput: Sendable {
        var spec: QuestionSpec
        var counts: [String: Int]
        var voters: Int

        /// The chart as `clicker-tally export` draws it, from the counts the page shows.
        var svg: [UInt8] {
            let results = ProjectorSnapshot.kindResults(spec: spec, counts: counts)
            return Array(ResultsChart(question: spec.number, title: spec.title, voters: voters, results: results).svg().utf8)
        }
    }

    /// The snapshot as the server sends it: compact JSON, keys sorted.
    public static func encode(_ snapshot: ProjectorSnapshot) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain fields cannot fail; an empty object would still be valid JSON.
        return (try? Array(encoder.encode(snapshot))) ?? Array("{}".utf8)
    }

    /// Publishes the current snapshot, then a new one after each change, until cancelled; then ends
    /// every subscriber's stream.
    public func run<C: Clock>(clock: C = ContinuousClock()) async where C.Duration == Duration {
        // Subscribed before the first reading, so no change between the two is missed. `settle`: one more
        // reading once the count publisher's next epoch is due (it moves counts only when read).
        let settle = max(interval, await controller.options.publishRule.minInterval)
        let updates = controller.changeFeed.updates(every: interval, settle: settle, clock: clock)
        await publishNow()
        for await _ in updates {
            if Task.isCancelled { break }
            await publishNow()
        }
        fanOut.finish()
    }

    /// Reads, encodes and publishes the current snapshot once.
    public func publishNow() async {
        // Read in one turn of the controller; encoded here, so the poll's thread only copies the counts.
        let (snapshot, chart) = await Self.reading(of: controller)
        let json = Self.encode(snapshot)
        // Unchanged: nothing to send, and no chart to draw.
        if fanOut.latest?.json.readableBytesView.elementsEqual(json) == true { return }
        fanOut.publish(json: json, svg: chart?.svg)
    }
}

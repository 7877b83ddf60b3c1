import ClickerTally
import ClickerWire
import Foundation
import ProjectorPage
import TallyDaemon

/// Keeps a `SnapshotFanOut` up to date with a poll: woken by the poll's change notices (never by a
/// polling timer), it copies what the page shows in one turn of the controller, then builds the
/// snapshot and encodes it once off the poll's thread, and publishes it when it differs from the last one.
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

    /// What the page shows now, as the poll has it: copied in one turn of the controller.
    struct Reading: Sendable {
        var joinCode: JoinCode
        var roster: Bool
        var spec: QuestionSpec
        var open: Bool
        var live: LiveCounts

        /// The snapshot the page shows, built from the copies (off the poll's thread: the results by
        /// kind, an instant-runoff count included, are computed here).
        var snapshot: ProjectorSnapshot {
            ProjectorSnapshot(joinCode: joinCode, roster: roster, spec: spec, open: open, hidden: live.hidden,
                              voters: live.voters, counts: live.counts, notYetShown: live.notYetShown)
        }

        /// The counts its chart is drawn from (nil while hidden).
        var chart: ChartInput? {
            live.hidden ? nil : ChartInput(spec: spec, counts: live.counts, voters: live.voters)
        }
    }

    /// Copies what the page shows now; nothing is computed on the poll's thread but the live counts.
    static func reading(of poll: isolated PollController, now: Date? = nil) -> Reading {
        Reading(joinCode: poll.joinCode, roster: poll.options.roster != nil, spec: poll.spec, open: poll.isOpen,
                live: poll.liveCounts(now: now))
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

    /// Publishes the current snapshot, then a new one after each change (paced on the poll's clock),
    /// until cancelled; then ends every subscriber's stream.
    public func run() async {
        let clock = controller.clock
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
        // Copied in one turn of the controller; the snapshot is built and encoded here, off the poll's thread.
        let reading = await Self.reading(of: controller)
        let json = Self.encode(reading.snapshot)
        let chart = reading.chart
        // Unchanged: nothing to send, and no chart to draw.
        if fanOut.latest?.json.readableBytesView.elementsEqual(json) == true { return }
        fanOut.publish(json: json, svg: chart?.svg)
    }
}

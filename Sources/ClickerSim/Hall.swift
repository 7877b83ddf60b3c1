// A lecture hall for the simulated air: seats on a grid, receivers where the instructor puts them.
// Pure geometry and parsing; the radio model is in PathLoss.swift.

/// A point of the hall's floor plan, in metres: `x` across the hall from its left wall, `y` from the
/// front wall towards the back.
public struct HallPoint: Sendable, Hashable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    public func distance(to other: HallPoint) -> Double {
        ((x - other.x) * (x - other.x) + (y - other.y) * (y - other.y)).squareRoot()
    }
}

/// Where a receiver (one of the tally's radios) stands.
public enum ReceiverPlacement: Sendable, Hashable, CustomStringConvertible {
    /// On the lectern, centred, `HallGeometry.lecternGap` in front of the first row.
    case front
    /// On a desk in the middle of the seating, centred, between the two middle rows.
    case middle
    /// Against the back wall, centred, half a row pitch behind the last row.
    case back
    /// Anywhere, in metres (`HallPoint`).
    case at(HallPoint)

    public var description: String {
        switch self {
        case .front: "front"
        case .middle: "middle"
        case .back: "back"
        case .at(let p): "\(formatMetres(p.x)):\(formatMetres(p.y))"
        }
    }
}

/// Rows of seats on a grid, people in every seat.
///
/// The default pitches are those of a tiered lecture hall with fixed seats and fold-down writing
/// tablets: 0.9 m from row to row (back-to-back; building guides give 0.85–1.0 m for such rows) and
/// 0.55 m from seat to seat (0.5–0.6 m), the first row 2 m behind the lectern. A 30 × 20 hall is
/// then 27 m deep and 11 m wide: 600 seats, a large lecture hall.
public struct HallGeometry: Sendable, Hashable {
    public var rows: Int
    public var seatsPerRow: Int
    /// Row to row and seat to seat, metres.
    public var rowPitch: Double
    public var seatPitch: Double
    /// From the lectern (the front receiver) to the first row, metres.
    public var lecternGap: Double
    /// Width of a seated person's torso across the row, metres: a straight path crossing a row within
    /// half of it from a seat's centre goes through that person.
    public var bodyWidth: Double

    public init(rows: Int, seatsPerRow: Int, rowPitch: Double = 0.9, seatPitch: Double = 0.55,
                lecternGap: Double = 2.0, bodyWidth: Double = 0.45) {
        self.rows = rows
        self.seatsPerRow = seatsPerRow
        self.rowPitch = rowPitch
        self.seatPitch = seatPitch
        self.lecternGap = lecternGap
        self.bodyWidth = bodyWidth
    }

    public var seats: Int { rows * seatsPerRow }
    public var width: Double { Double(seatsPerRow) * seatPitch }
    /// The front wall is at y = 0, the lectern at y = 0.5, the first row `lecternGap` behind it.
    var lecternY: Double { 0.5 }
    var firstRowY: Double { lecternY + lecternGap }

    /// The centre of seat `seat` (0 at the left) of row `row` (0 at the front).
    public func seat(row: Int, seat: Int) -> HallPoint {
        HallPoint(x: (Double(seat) + 0.5) * seatPitch, y: firstRowY + Double(row) * rowPitch)
    }

    /// Where a receiver placed at `placement` stands.
    public func point(of placement: ReceiverPlacement) -> HallPoint {
        switch placement {
        case .front: HallPoint(x: width / 2, y: lecternY)
        case .middle: HallPoint(x: width / 2, y: firstRowY + (Double(rows) / 2 - 0.5) * rowPitch)
        case .back: HallPoint(x: width / 2, y: firstRowY + (Double(rows) - 0.5) * rowPitch)
        case .at(let p): p
        }
    }

    /// The people the straight path from `a` to `b` goes through, not counting anyone sitting at
    /// either end. In one row: the seats between. Across rows: each row strictly between the two
    /// ends whose line the path crosses within half a body width of a seat's centre.
    public func bodies(between a: HallPoint, and b: HallPoint) -> Int {
        let ra = (a.y - firstRowY) / rowPitch, rb = (b.y - firstRowY) / rowPitch
        if abs(ra - rb) < 1e-9 {
            let row = ra.rounded()
            guard abs(ra - row) < 1e-9, row >= 0, row < Double(rows) else { return 0 }
            let sa = a.x / seatPitch - 0.5, sb = b.x / seatPitch - 0.5
            let lo = Swift.max(0, Int((Swift.min(sa, sb) + 1e-9).rounded(.down)) + 1)
            let hi = Swift.min(seatsPerRow - 1, Int((Swift.max(sa, sb) - 1e-9).rounded(.up)) - 1)
            return Swift.max(0, hi - lo + 1)
        }
        let lo = Swift.max(0, Int((Swift.min(ra, rb) + 1e-9).rounded(.down)) + 1)
        let hi = Swift.min(rows - 1, Int((Swift.max(ra, rb) - 1e-9).rounded(.up)) - 1)
        guard lo <= hi else { return 0 }
        var n = 0
        for row in lo...hi {
            let t = (Double(row) - ra) / (rb - ra)
            let x = a.x + t * (b.x - a.x)
            guard x >= 0, x <= width else { continue }
            let nearest = Swift.min(Double(seatsPerRow - 1), Swift.max(0, (x / seatPitch - 0.5).rounded()))
            if abs(x - (nearest + 0.5) * seatPitch) <= bodyWidth / 2 { n += 1 }
        }
        return n
    }
}

/// Why a hall or receiver description is refused.
public struct HallSyntaxError: Error, CustomStringConvertible, Equatable {
    public let description: String
}

extension HallGeometry {
    /// `ROWSxSEATS`, such as `30x20`: 30 rows of 20 seats, 1 to 200 each.
    public static func parse(_ text: String) throws(HallSyntaxError) -> HallGeometry {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let rows = Int(parts[0]), let seats = Int(parts[1]) else {
            throw HallSyntaxError(description: "a hall is ROWSxSEATS, such as 30x20 (30 rows of 20 seats); got \"\(text)\"")
        }
        guard (1...200).contains(rows), (1...200).contains(seats) else {
            throw HallSyntaxError(description: "a hall has 1 to 200 rows of 1 to 200 seats; got \(rows) rows of \(seats)")
        }
        return HallGeometry(rows: rows, seatsPerRow: seats)
    }
}

extension ReceiverPlacement {
    /// A comma-separated list of `front`, `middle`, `back` or `X:Y` (metres from the hall's front-left
    /// corner, inside `geometry`'s walls), 1 to 8 receivers, no two at the same place.
    public static func parseList(_ text: String, in geometry: HallGeometry) throws(HallSyntaxError) -> [ReceiverPlacement] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: " ")
        }
        guard (1...8).contains(items.count), !items.contains(where: \.isEmpty) else {
            throw HallSyntaxError(description: "receivers are 1 to 8 of front, middle, back or X:Y in metres, separated by commas; got \"\(text)\"")
        }
        var list: [ReceiverPlacement] = []
        for item in items {
            let p: ReceiverPlacement
            switch item.lowercased() {
            case "front": p = .front
            case "middle": p = .middle
            case "back": p = .back
            default:
                let xy = item.split(separator: ":", omittingEmptySubsequences: false)
                guard xy.count == 2, let x = Double(xy[0]), let y = Double(xy[1]), x.isFinite, y.isFinite else {
                    throw HallSyntaxError(description: "unknown receiver position \"\(item)\": front, middle, back or X:Y in metres (such as 5.5:14)")
                }
                let depth = geometry.point(of: .back).y + 0.5
                guard (0...geometry.width).contains(x), (0...depth).contains(y) else {
                    throw HallSyntaxError(description: "receiver \(item) is outside the hall: x from 0 to \(formatMetres(geometry.width)) m, y from 0 to \(formatMetres(depth)) m")
                }
                p = .at(HallPoint(x: x, y: y))
            }
            guard !list.contains(where: { geometry.point(of: $0) == geometry.point(of: p) }) else {
                throw HallSyntaxError(description: "two receivers at the same place (\(item))")
            }
            list.append(p)
        }
        return list
    }
}

private extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}

func formatMetres(_ m: Double) -> String {
    m == m.rounded() ? String(Int(m)) : String((m * 100).rounded() / 100)
}

import ClickerWire

/// Numeric results: a histogram of the counted values, their median and quartiles.
///
/// Values are kept in wire units (a ballot's `value`, meaning `value / 10^decimals`); statistics are
/// in half wire units, since a median or quartile may fall halfway between two values.
///
/// **Quartiles** are the medians of the lower and upper halves of the sorted values; with an odd
/// number of values the median itself is in neither half (the "exclusive" method, Moore & McCabe;
/// TI-83). So [1, 2, 3, 4, 5, 6, 7, 8] has quartiles 2.5 and 6.5 and median 4.5; [1, 2, 3, 4, 5]
/// has 1.5, 3 and 4.5. With one value, all three are that value.
///
/// **Bins.** Up to ``maximumBins`` distinct values get one bin each. Otherwise the observed span
/// (lowest to highest value) is cut into at most ``maximumBins`` bins of equal width, the width a
/// 1, 2 or 5 times a power of ten in wire units, the first bin starting at a multiple of the width.
public struct NumericResults: Sendable, Hashable {
    /// One bin of the histogram: wire values `lowest…highest`, inclusive.
    public struct Bin: Sendable, Hashable {
        public var lowest: Int
        public var highest: Int
        public var count: Int
    }

    public static let maximumBins = 10

    /// Digits after the decimal point (the question's scale).
    public let decimals: Int
    /// Counted ballots.
    public let ballots: Int
    public let bins: [Bin]
    /// In half wire units; nil without ballots.
    public let minimum: Int?
    public let maximum: Int?
    public let lowerQuartile: Int?
    public let median: Int?
    public let upperQuartile: Int?

    /// From the counted values (value → ballots) of a question with `decimals` decimals.
    public init(values: [(value: Int16, count: Int)], decimals: Int) {
        self.decimals = decimals
        let sorted = values.filter { $0.count > 0 }.sorted { $0.value < $1.value }.map { (Int($0.value), $0.count) }
        let n = sorted.reduce(0) { $0 + $1.1 }
        ballots = n
        guard let first = sorted.first, let last = sorted.last else {
            bins = []
            minimum = nil; maximum = nil; lowerQuartile = nil; median = nil; upperQuartile = nil
            return
        }
        minimum = 2 * first.0
        maximum = 2 * last.0
        /// The value at 0-based position `i` of the sorted ballots.
        func at(_ i: Int) -> Int {
            var seen = 0
            for (v, c) in sorted {
                seen += c
                if i < seen { return v }
            }
            return last.0
        }
        /// Twice the median of positions `from..<to`.
        func medianTwice(_ from: Int, _ to: Int) -> Int {
            let k = to - from
            return k % 2 == 1 ? 2 * at(from + k / 2) : at(from + k / 2 - 1) + at(from + k / 2)
        }
        median = medianTwice(0, n)
        if n == 1 {
            lowerQuartile = median
            upperQuartile = median
        } else {
            lowerQuartile = medianTwice(0, n / 2)
            upperQuartile = medianTwice((n + 1) / 2, n)
        }
        bins = Self.histogram(sorted)
    }

    static func histogram(_ sorted: [(Int, Int)]) -> [Bin] {
        if sorted.count <= maximumBins {
            return sorted.map { Bin(lowest: $0.0, highest: $0.0, count: $0.1) }
        }
        let lo = sorted[0].0, hi = sorted[sorted.count - 1].0
        let span = hi - lo + 1
        var width = 1
        search: while true {
            for step in [1, 2, 5] where width * step * maximumBins >= span
                && (floorDiv(hi, width * step) - floorDiv(lo, width * step) + 1) <= maximumBins {
                width *= step
                break search
            }
            width *= 10
        }
        let start = floorDiv(lo, width) * width
        let count = (hi - start) / width + 1
        var bins = (0..<count).map { Bin(lowest: start + $0 * width, highest: start + ($0 + 1) * width - 1, count: 0) }
        for (v, c) in sorted { bins[(v - start) / width].count += c }
        return bins
    }

    static func floorDiv(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }

    // MARK: Text

    /// A wire value in the question's units: `-1.5` for -15 with one decimal.
    public func text(wire v: Int) -> String { NumericText.text(v, decimals: decimals) }

    /// A statistic (half wire units) in the question's units, one more digit when it falls halfway.
    public func text(halfUnits h: Int) -> String { Self.text(halfUnits: h, decimals: decimals) }

    /// A statistic of `h` half wire units with `decimals` decimals, one more digit when it falls halfway.
    public static func text(halfUnits h: Int, decimals: Int) -> String {
        h % 2 == 0 ? NumericText.text(h / 2, decimals: decimals) : NumericText.text(h * 5, decimals: decimals + 1)
    }

    /// A bin's label: `4`, or `10–19`, in the question's units.
    public func label(_ b: Bin) -> String {
        b.lowest == b.highest ? text(wire: b.lowest) : text(wire: b.lowest) + "–" + text(wire: b.highest)
    }

    /// A statistic as a number in the question's units (JSON).
    public func number(halfUnits h: Int) -> Double {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        return Double(h) / 2 / scale
    }
}

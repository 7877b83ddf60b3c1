import ClickerWire

/// The figures of ranked and numeric questions, and a chart from a question's ``KindResults``.
extension ResultsChart {
    /// An instant-runoff count as charted.
    public struct Runoff: Sendable, Hashable {
        /// One round: each option still in the race and its votes (`Bar.option` its letter).
        public struct Round: Sendable, Hashable {
            public var number: Int
            public var votes: [Bar]
            public var active: Int
            public var exhausted: Int
            public var eliminated: String?

            public init(number: Int, votes: [Bar], active: Int, exhausted: Int, eliminated: String? = nil) {
                self.number = number
                self.votes = votes
                self.active = active
                self.exhausted = exhausted
                self.eliminated = eliminated
            }
        }

        /// Every offered option's letter, A first (the columns of the rounds' table).
        public var options: [String]
        public var rounds: [Round]
        /// The winner's letter, or the tied options' letters; empty for no winner.
        public var leaders: [String]
        /// One line for the outcome (`RankedResults.summary`).
        public var summary: String

        public init(options: [String], rounds: [Round], leaders: [String], summary: String) {
            self.options = options
            self.rounds = rounds
            self.leaders = leaders
            self.summary = summary
        }
    }

    /// A numeric question's histogram; labels and statistics are text in the question's units.
    public struct Histogram: Sendable, Hashable {
        /// One bin per bar: `option` and `label` its label (`4`, `10–19`).
        public var bins: [Bar]
        public var minimum: String?
        public var lowerQuartile: String?
        public var median: String?
        public var upperQuartile: String?
        public var maximum: String?

        public init(bins: [Bar], minimum: String? = nil, lowerQuartile: String? = nil, median: String? = nil,
                    upperQuartile: String? = nil, maximum: String? = nil) {
            self.bins = bins
            self.minimum = minimum
            self.lowerQuartile = lowerQuartile
            self.median = median
            self.upperQuartile = upperQuartile
            self.maximum = maximum
        }
    }

    /// The chart of a question's per-kind results: `.rounds` for a ranked question, `.histogram` for
    /// a numeric one, bars for the others. `voters`: counted voters.
    public init(question: UInt8, title: String?, voters: Int, results: KindResults) {
        switch results {
        case .choice(let c):
            self.init(question: question, title: title, voters: voters,
                      figure: .bars(c.options.map { Bar(option: $0.option, label: $0.option, text: $0.text, count: $0.count) }))
        case .trueFalse(let c):
            self.init(question: question, title: title, voters: voters, figure: .bars(c.options.map {
                Bar(option: $0.option, label: $0.option == "true" ? "True" : "False", count: $0.count)
            }))
        case .multiSelect(let m):
            // `A+`: the multi-select form of "A chosen", so that it never reads as the single choice A.
            self.init(question: question, title: title, voters: voters,
                      note: "Each voter may choose several options; a bar counts the voters who chose it.",
                      figure: .bars(m.options.map { Bar(option: $0.option + "+", label: $0.option, text: $0.text, count: $0.count) }))
        case .ranked(let r):
            let offered = r.count.rounds.first?.votes.count ?? 0
            let letters = (0..<offered).map { Answer.choice(UInt8($0)).description }
            let runoff = Runoff(options: letters, rounds: r.rounds.map { x in
                Runoff.Round(number: x.number,
                             votes: x.votes.map { Bar(option: $0.option, label: $0.option, text: $0.text, count: $0.count) },
                             active: x.active, exhausted: x.exhausted, eliminated: x.eliminated)
            }, leaders: r.leaders, summary: "Instant runoff: " + r.summary + ".")
            self.init(question: question, title: title, voters: voters, note: runoff.summary, figure: .rounds(runoff))
        case .numeric(let n):
            let histogram = Histogram(
                bins: n.bins.map { Bar(option: n.label($0), label: n.label($0), count: $0.count) },
                minimum: n.minimum.map(n.text(halfUnits:)), lowerQuartile: n.lowerQuartile.map(n.text(halfUnits:)),
                median: n.median.map(n.text(halfUnits:)), upperQuartile: n.upperQuartile.map(n.text(halfUnits:)),
                maximum: n.maximum.map(n.text(halfUnits:)))
            self.init(question: question, title: title, voters: voters, figure: .histogram(histogram))
        }
    }
}

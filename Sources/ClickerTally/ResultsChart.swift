import ClickerWire

/// What a chart of one question shows, in the form that fits the question's kind (pure, no I/O).
/// ``svg()`` renders it as a standalone SVG document (ChartSVG.swift) for slides and the export.
public struct ResultsChart: Sendable, Hashable {
    /// One bar: an answer and the votes it counts.
    public struct Bar: Sendable, Hashable {
        /// The answer's key, as results name it (`A`, `true`, `12.5`): the bar's `data-option`.
        public var option: String
        /// What the chart prints before the bar: the letter, `True`, a value.
        public var label: String
        /// The option's text, when the question has one.
        public var text: String?
        public var count: Int

        public init(option: String, label: String, text: String? = nil, count: Int) {
            self.option = option
            self.label = label
            self.text = text
            self.count = count
        }
    }

    /// The form of the chart. Each kind of result gets its own case and its own renderer
    /// (ChartSVG.swift, ChartFiguresSVG.swift).
    public enum Figure: Sendable, Hashable {
        /// One bar per answer (single choice, true/false), per option chosen (multi-select: a voter
        /// who chose A and C counts on both).
        case bars([Bar])
        /// A ranked question's instant-runoff count: the last round as bars, and every round.
        case rounds(Runoff)
        /// A numeric question's histogram, with its median and quartiles.
        case histogram(Histogram)
    }

    public var question: UInt8
    public var title: String?
    /// Counted voters.
    public var voters: Int
    /// A line under the title on how to read the bars, when they do not add up to the voters.
    public var note: String?
    public var figure: Figure

    public init(question: UInt8, title: String?, voters: Int, note: String? = nil, figure: Figure) {
        self.question = question
        self.title = title
        self.voters = voters
        self.note = note
        self.figure = figure
    }

    /// The chart of a question's results (its per-kind results, ``QuestionResults/byKind``).
    public init(results: QuestionResults, spec: QuestionSpec) {
        self.init(question: results.question, title: spec.title, voters: results.voters, results: results.byKind)
    }
}

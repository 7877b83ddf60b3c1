/// The kinds of question an instructor asks, by the names the question file, the command line and
/// D-Bus use.
public enum QuestionKind: String, Sendable, CaseIterable {
    case single, multi, truefalse, numeric, ranked

    /// The answer kind a ballot for this question carries.
    public var answerKind: Answer.Kind {
        switch self {
        case .single: .choice
        case .multi: .multiSelect
        case .truefalse: .trueFalse
        case .numeric: .numeric
        case .ranked: .ranking
        }
    }

    /// Whether the question names options (letters A…).
    public var hasOptions: Bool { self == .single || self == .multi || self == .ranked }

    /// "single, multi, truefalse, numeric, ranked".
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")
}

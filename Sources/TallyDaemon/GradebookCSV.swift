import ClickerStore
import ClickerTally

/// The gradebook of a roster poll as CSV files an LMS imports as they are (pure). Two files, since
/// no one layout suits both: Canvas reads a "Points Possible" row under the header, and Moodle
/// aborts an import at any row that names no student.
///
/// Grade columns, the same in both files, named after the poll (`Clicker 2026-11-23 #2285 …`) so
/// that each lecture makes new grade items and never overwrites another's:
/// - `… Q<n>` for each graded question: the points scored (the question's points when correct, 0
///   when wrong or unanswered), out of the question's points;
/// - `… participation`: questions answered, out of questions asked;
/// - `… correctness` (when any question is graded): points scored, out of the graded questions' points.
///
/// Canvas (Grades → Import): `Student`, `ID` (left empty: Canvas's own user ID, which the class list
/// does not have), `SIS User ID` (the student ID: Canvas finds the student by it, then by name),
/// `SIS Login ID` and `Section` (empty), the grade columns; the second row, `Points Possible`, gives
/// the points of the assignments the import creates.
///
/// Moodle (Grades → Import → CSV file): `Full name`, `ID number` (the student ID; map it to the
/// user's ID number), the grade columns (map each to a new grade item, or to an existing one).
public enum GradebookCSV {
    /// The grade columns: title, points possible, and each student's value.
    public static func columns(_ g: Gradebook, prefix: String) -> [(title: String, possible: Double, value: (Gradebook.Student) -> Double)] {
        var out: [(String, Double, (Gradebook.Student) -> Double)] = []
        for (i, q) in g.questions.enumerated() where q.graded {
            out.append(("\(prefix) Q\(q.spec.number)", q.pointsPossible, { $0.scores[i].points ?? 0 }))
        }
        out.append(("\(prefix) participation", Double(g.questionsAsked), { Double($0.answered) }))
        if g.graded { out.append(("\(prefix) correctness", g.pointsPossible, { $0.points })) }
        return out
    }

    /// `Clicker <start date, UTC> #<vote ID>`: what the grade columns of `poll` are named after.
    public static func prefix(_ poll: PollRecord) -> String {
        "Clicker \(Exporter.timestamp(poll.createdAt).prefix(10)) #\(Exporter.voteIDText(poll.voteID))"
    }

    /// The file Canvas imports.
    public static func canvas(_ g: Gradebook, prefix: String) -> String {
        let columns = columns(g, prefix: prefix)
        var rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + columns.map(\.title)]
        rows.append(["Points Possible", "", "", "", ""] + columns.map { number($0.possible) })
        for s in g.students {
            rows.append([s.entry.name, "", s.entry.studentID, "", ""] + columns.map { number($0.value(s)) })
        }
        return Exporter.csv(rows)
    }

    /// The file Moodle imports.
    public static func moodle(_ g: Gradebook, prefix: String) -> String {
        let columns = columns(g, prefix: prefix)
        var rows = [["Full name", "ID number"] + columns.map(\.title)]
        for s in g.students {
            rows.append([s.entry.name, s.entry.studentID] + columns.map { number($0.value(s)) })
        }
        return Exporter.csv(rows)
    }

    /// `2`, `0.5`, `1.25`: a decimal point, no exponent, at most four decimals, no trailing zeros.
    public static func number(_ d: Double) -> String {
        guard d.isFinite, abs(d) < 1e12 else { return "0" }
        let tenThousandths = Int((d * 10_000).rounded())
        let whole = abs(tenThousandths) / 10_000, fraction = abs(tenThousandths) % 10_000
        var text = (tenThousandths < 0 ? "-" : "") + String(whole)
        if fraction > 0 {
            var digits = String(fraction)
            digits = String(repeating: "0", count: 4 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            text += "." + digits
        }
        return text
    }
}

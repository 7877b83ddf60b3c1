import ArgumentParser
import ClickerStore
import ClickerTally
import Foundation
import TallyDaemon
import TerminalView

/// `clicker-tally roster …`: the class list for identified (roster) polls.
struct RosterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roster", abstract: "Manage the class list for roster polls.",
        subcommands: [Import.self, List.self])

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a CSV of name,student_id,enrollment_code (from `clicker-vote enroll`).")
        @Argument(help: "The CSV file.") var file: String
        @Option(help: "Database file.") var db: String?

        func run() async throws {
            guard let data = FileManager.default.contents(atPath: file) else { throw Failure("cannot read \(file)") }
            let roster: Roster
            do { roster = try Roster(csv: String(decoding: data, as: UTF8.self)) } catch {
                throw Failure("\(file): \(error)")
            }
            do {
                let store = try ClickerStore(path: db)
                try RosterBook.save(roster, to: store)
                print("imported \(roster.entries.count) students; start a roster poll with `clicker-tally --roster`")
            } catch { throw Failure("\(error)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the enrolled students (no keys).")
        @Option(help: "Database file.") var db: String?

        func run() async throws {
            do {
                let roster = try RosterBook.load(from: try ClickerStore(path: db))
                for e in roster?.entries ?? [] { print(RosterBook.listing(e)) }
            } catch { throw Failure("\(error)") }
        }
    }
}

import ArgumentParser
import ClickerCommandLine
import ClickerStore
import ClickerTally
import Foundation
import TallyDaemon
import TerminalView

/// `clicker-tally roster …`: the class list for identified (roster) polls.
struct RosterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roster", abstract: "Manage the class list for roster polls.",
        subcommands: [Import.self, List.self, Remove.self, Replace.self])

    /// The database, as `--db` names it.
    struct StoreArguments: ParsableArguments {
        @Option(help: "Database file (default: the tally's).") var db: String?

        func open() throws -> ClickerStore {
            do { return try ClickerStore(path: db) } catch { throw Failure("cannot open the database: \(error)") }
        }
    }

    /// Reads a class list CSV; errors name the file and line.
    static func read(_ file: String) throws -> Roster {
        let text: String
        do { text = try TextFile.read(file) } catch { throw Failure("cannot read \(file): \(error)") }
        do { return try Roster(csv: text) } catch { throw Failure("\(file): \(error)") }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add the students of a CSV of name,student_id,enrollment_code (from `clicker-vote enroll`).",
            discussion: "All rows or none: a student ID or enrollment code that is already enrolled differently is refused.")
        @Argument(help: "The CSV file.") var file: String
        @OptionGroup var store: StoreArguments

        func run() async throws {
            let roster = try RosterCommand.read(file)
            let db = try store.open()
            do { try RosterBook.save(roster, to: db) } catch { throw Failure("\(file): nothing imported: \(error)") }
            print("imported \(roster.entries.count) students; start a roster poll with `clicker-tally --roster`")
        }
    }

    struct Replace: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace the whole class list by a CSV of name,student_id,enrollment_code.",
            discussion: "All or nothing: on any error the stored class list stays as it was.")
        @Argument(help: "The CSV file.") var file: String
        @OptionGroup var store: StoreArguments

        func run() async throws {
            let roster = try RosterCommand.read(file)
            let db = try store.open()
            do { try RosterBook.save(roster, to: db, replacing: true) } catch {
                throw Failure("\(file): the class list was not replaced: \(error)")
            }
            print("the class list now holds the \(roster.entries.count) students of \(file)")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove students from the class list by student ID (all of them, or none if one is not enrolled).")
        @Argument(help: "Student IDs.") var studentIDs: [String]
        @OptionGroup var store: StoreArguments

        func validate() throws {
            if studentIDs.isEmpty { throw ValidationError("name at least one student ID") }
        }

        func run() async throws {
            let db = try store.open()
            do { try RosterBook.remove(studentIDs, from: db) } catch { throw Failure("nothing removed: \(error)") }
            print("removed \(studentIDs.count) students")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the enrolled students (no keys).")
        @OptionGroup var store: StoreArguments

        func run() async throws {
            do {
                for line in try RosterBook.listing(try store.open()) { print(line) }
            } catch let f as Failure { throw f } catch { throw Failure("\(error)") }
        }
    }
}
